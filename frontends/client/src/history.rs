//! A conversation's history read page by page: a replay holds one page (at most 1,000
//! entries or about 8 MiB, the kernel's page) at a time, whatever the conversation's size.

use superpi_proto::method::{ConversationInfo, HistoryResult};
use superpi_proto::{Entry, Event};

use crate::{ClientError, KernelClient};

/// The pages of one conversation's history, in order, following the kernel's cursor
/// (`after_seq`, the last seq of the page before). They end at the conversation's head as
/// the first page found it (or before, at a bound the caller gives), so a watch from that
/// head (`from_seq`) continues exactly where the pages end: nothing twice, nothing missed.
pub struct HistoryPages {
    client: KernelClient,
    conversation: ConversationInfo,
    /// The last seq the pages hold.
    end: u64,
    /// What the first page of a history from its start names beside its entries.
    last_compaction: Option<Event>,
    last_plan: Option<Event>,
    /// The first page, read to learn the conversation, not yet taken.
    first: Option<Vec<Entry>>,
    /// The cursor: the seq of the last entry handed out.
    after: Option<u64>,
    /// The kernel said more pages follow.
    more: bool,
}

impl HistoryPages {
    /// Reads the first page: the entries after `after`, up to `until` at most.
    pub(crate) async fn open(
        client: &KernelClient,
        conversation_id: i64,
        after: Option<u64>,
        until: Option<u64>,
    ) -> Result<HistoryPages, ClientError> {
        let page = client.history_page(conversation_id, after).await?;
        let head = page.conversation.head_seq;
        let mut pages = HistoryPages {
            client: client.clone(),
            conversation: page.conversation.clone(),
            end: until.map_or(head, |until| until.min(head)),
            last_compaction: page.last_compaction.clone(),
            last_plan: page.last_plan.clone(),
            first: None,
            after,
            more: false,
        };
        pages.first = Some(pages.accept(page));
        Ok(pages)
    }

    /// The conversation as the first page described it.
    pub fn conversation(&self) -> &ConversationInfo {
        &self.conversation
    }

    /// The last seq the pages hold: the head the first page found, or the caller's bound.
    pub fn end_seq(&self) -> u64 {
        self.end
    }

    /// The conversation's last `compaction_completed` event, when the pages start at its
    /// start (read before the entries: a later compaction may be among them).
    pub fn last_compaction(&self) -> Option<&Event> {
        self.last_compaction.as_ref()
    }

    /// The conversation's latest `plan_updated` event, when the pages start at its start.
    pub fn last_plan(&self) -> Option<&Event> {
        self.last_plan.as_ref()
    }

    /// The next page's entries, or `None` after the last.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Entry>>, ClientError> {
        if let Some(first) = self.first.take() {
            return Ok(Some(first));
        }
        if !self.more {
            return Ok(None);
        }
        let page = self.client.history_page(self.conversation.conversation_id, self.after).await?;
        Ok(Some(self.accept(page)))
    }

    /// Every remaining entry in one list (for a caller that needs the whole history at once).
    pub async fn collect(mut self) -> Result<HistoryResult, ClientError> {
        let mut entries = Vec::new();
        while let Some(page) = self.next_page().await? {
            entries.extend(page);
        }
        let (last_compaction, last_plan) = (self.last_compaction, self.last_plan);
        Ok(HistoryResult { conversation: self.conversation, entries, more: false, last_compaction, last_plan })
    }

    /// Takes a page's entries up to the head, moves the cursor past them and says whether
    /// another page follows. A page that brings nothing new ends the pages, so a kernel that
    /// kept saying `more` could not loop a reader forever.
    fn accept(&mut self, page: HistoryResult) -> Vec<Entry> {
        let head = self.end;
        let mut entries = page.entries;
        let past_head = entries.iter().any(|e| e.seq >= head);
        entries.retain(|e| e.seq <= head && self.after.is_none_or(|after| e.seq > after));
        self.more = page.more && !entries.is_empty() && !past_head;
        if let Some(last) = entries.last() {
            self.after = Some(last.seq);
        }
        entries
    }
}

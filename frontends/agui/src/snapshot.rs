//! A `MESSAGES_SNAPSHOT` written to an SSE body page by page: the frontend holds one page of
//! the history and the messages in flight, never the whole conversation, whatever its size.
//!
//! The visible messages start at the last compaction (its summary, the entries it kept, then
//! those after it), which is known only once every page is read: a conversation of one page
//! is sent from that page; a longer one is read twice, once for where its last compaction is
//! and once from there, each page dropped once written.

use bytes::Bytes;
use superpi_client::{ClientError, HistoryPages, KernelClient};
use superpi_proto::{Entry, EntryKind};
use tokio::sync::mpsc;

use crate::history;
use crate::wire::{AguiEvent, AguiMessage};

/// Why a snapshot did not go out whole.
#[derive(Debug)]
pub enum Failed {
    /// The client went away.
    Gone,
    /// Reading the history failed before anything was written: the stream can go on.
    Unread(ClientError),
    /// Reading the history failed after the snapshot began: the event is cut, the stream
    /// must end.
    Cut(ClientError),
}

/// Writes the visible messages of `pages` (from the conversation's start to `pages`' end) as
/// one `MESSAGES_SNAPSHOT` event.
pub async fn send(client: &KernelClient, mut pages: HistoryPages, tx: &mpsc::Sender<Bytes>) -> Result<(), Failed> {
    let conversation_id = pages.conversation().conversation_id;
    let end = pages.end_seq();
    let last_compaction = pages.last_compaction().cloned();
    let mut first: Option<Vec<Entry>> = None;
    let mut compaction = None;
    let mut read = 0;
    while let Some(page) = pages.next_page().await.map_err(Failed::Unread)? {
        read += 1;
        compaction = page.iter().rev().find(|e| e.kind == EntryKind::Compaction).map(|e| e.seq).or(compaction);
        // Only a conversation of one page keeps it for the writing.
        first = (read == 1).then_some(page);
    }
    let (before, after) = AguiEvent::messages_snapshot_frame();
    let mut writer = Writer { tx, written: 0 };
    if let (Some(page), 1) = (first, read) {
        writer.bytes(format!("data: {before}")).await?;
        for message in history::visible_messages(&page, last_compaction.as_ref()) {
            writer.message(&message).await?;
        }
        return writer.bytes(format!("{after}\n\n")).await;
    }
    // The ranges to read again, in the order shown: (after, until, without compactions).
    let ranges = match compaction {
        None => vec![(None, end, false)],
        Some(at) => {
            let mut ranges = vec![(Some(at - 1), at, false)];
            if let Some(kept) = history::kept_from(at, last_compaction.as_ref()).filter(|&kept| kept < at) {
                ranges.push((Some(kept.saturating_sub(1)), at - 1, true));
            }
            ranges.push((Some(at), end, false));
            ranges
        }
    };
    writer.bytes(format!("data: {before}")).await?;
    for (after_seq, until, without_compactions) in ranges {
        let mut pages = client.history_range(conversation_id, after_seq, until).await.map_err(Failed::Cut)?;
        while let Some(page) = pages.next_page().await.map_err(Failed::Cut)? {
            for entry in page.iter().filter(|e| !(without_compactions && e.kind == EntryKind::Compaction)) {
                for message in history::entry_messages(entry) {
                    writer.message(&message).await?;
                }
            }
        }
    }
    writer.bytes(format!("{after}\n\n")).await
}

struct Writer<'a> {
    tx: &'a mpsc::Sender<Bytes>,
    written: usize,
}

impl Writer<'_> {
    /// One message of the list: its JSON (which holds no line break, so the event stays one
    /// `data:` line), after a comma unless it is the first.
    async fn message(&mut self, message: &AguiMessage) -> Result<(), Failed> {
        let json = serde_json::to_string(message).unwrap_or_default();
        let text = if self.written == 0 { json } else { format!(",{json}") };
        self.written += 1;
        self.bytes(text).await
    }

    /// The channel is bounded: a slow client holds the writer here, not more messages.
    async fn bytes(&self, text: String) -> Result<(), Failed> {
        self.tx.send(Bytes::from(text)).await.map_err(|_| Failed::Gone)
    }
}

//! The model's context, derived from the stored entries by rules, and its size.
//!
//! Rules: every entry is kept in the store (history, replay and fork show everything); the
//! last `compaction` entry slices the context: the model reads its summary, then the entries
//! from the seq its `compaction_completed` event names as `head_entry_id` (the recent turns it
//! kept) and every entry after it. The system prompt is not part of the entries and never
//! changes with compaction, so a provider's prompt cache stays warm.
//!
//! Size: the last answer's usage as the provider counted it (input plus output) and an
//! estimate (`superpi_providers::tokens`) of what came after it; a context with no counted
//! answer since its last compaction is estimated whole.

use serde_json::Value;
use superpi_proto::{Entry, EntryKind, Event, EventBody, Message, Role};
use superpi_providers::{ModelLimits, ModelRequest, ToolSpec, tokens};

use superpi_store::{Store, StoreError};

/// The model, its limits and the request framing of a conversation now.
pub(crate) struct Frame<'a> {
    pub model: &'a str,
    /// The conversation's thinking effort (turn requests only; summaries ask for none).
    pub effort: Option<superpi_proto::Effort>,
    pub system: Option<&'a str>,
    pub tools: &'a [ToolSpec],
    pub limits: ModelLimits,
}

/// The context a conversation's next model request holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    /// The summary of the last compaction (a user message), when there is one.
    pub summary: Option<Message>,
    /// The seq of that compaction entry.
    pub compaction_seq: Option<u64>,
    /// The entries the model reads after the summary, in seq order.
    pub entries: Vec<Entry>,
}

impl Context {
    /// The messages of a request: the summary, then the kept entries.
    pub fn messages(&self) -> Vec<Message> {
        self.summary.iter().cloned().chain(self.entries.iter().map(|e| e.message.clone())).collect()
    }

    /// The tokens a request with this context, `system` and `tools` holds.
    pub fn tokens(&self, system: Option<&str>, tools: &[ToolSpec]) -> u64 {
        let counted = self.entries.iter().enumerate().rev().find_map(|(i, entry)| {
            let usage = entry.message.usage.filter(|u| u.input_tokens > 0)?;
            let after_compaction = self.compaction_seq.is_none_or(|c| entry.seq > c);
            (entry.kind == EntryKind::Assistant && after_compaction).then_some((i, usage))
        });
        match counted {
            Some((i, usage)) => {
                // The provider counted the request that made this answer; the answer itself
                // is counted generously (a mock counts deltas, not tokens).
                let answer = usage.output_tokens.max(tokens::message(&self.entries[i].message));
                let after: u64 = self.entries[i + 1..].iter().map(|e| tokens::message(&e.message)).sum();
                usage.input_tokens + answer + after
            }
            None => tokens::request(&ModelRequest {
                model: String::new(),
                system: system.map(str::to_string),
                messages: self.messages(),
                tools: tools.to_vec(),
                max_tokens: None,
                effort: None,
                output_schema: None,
            }),
        }
    }
}

/// Derives a conversation's context from its stored entries.
pub(crate) fn derive(store: &dyn Store, conversation_id: i64) -> Result<Context, StoreError> {
    let entries = store.entries(conversation_id)?;
    let Some(last) = entries.iter().rposition(|e| e.kind == EntryKind::Compaction) else {
        return Ok(Context { summary: None, compaction_seq: None, entries });
    };
    let compaction = &entries[last];
    let seq = compaction.seq;
    let head = compaction_head(store, conversation_id, seq)?;
    let kept = entries
        .iter()
        .filter(|e| e.kind != EntryKind::Compaction)
        .filter(|e| e.seq > seq || head.is_some_and(|head| e.seq >= head))
        .cloned()
        .collect();
    Ok(Context { summary: Some(compaction.message.clone()), compaction_seq: Some(seq), entries: kept })
}

/// The first kept seq of the compaction stored at `seq`: its event's `head_entry_id`; `None`
/// when it kept nothing before itself (or its event cannot be read: then the summary stands
/// for everything before it, which is still a valid context).
fn compaction_head(store: &dyn Store, conversation_id: i64, seq: u64) -> Result<Option<u64>, StoreError> {
    let events = store.events_page(conversation_id, seq.saturating_sub(1), seq, 1, usize::MAX)?;
    let head = events.first().and_then(|(_, wire)| Event::from_json(wire).ok()).and_then(|event| match event.body {
        EventBody::CompactionCompleted { head_entry_id, .. } => head_entry_id.as_u64(),
        _ => None,
    });
    Ok(head)
}

/// What a request may hold: the window less room for the answer.
pub(crate) fn request_limit(limits: ModelLimits) -> u64 {
    limits.context_window.saturating_sub(output_reserve(limits))
}

/// Room kept for the answer: the model's output limit, but at most a quarter of the window
/// (models with huge output limits would leave no room for the conversation).
pub(crate) fn output_reserve(limits: ModelLimits) -> u64 {
    limits.max_output_tokens.min(limits.context_window / 4)
}

/// The size past which a conversation is compacted before its next request.
pub(crate) fn compact_threshold(limits: ModelLimits, percent: u8) -> u64 {
    (limits.context_window.saturating_mul(u64::from(percent)) / 100).min(request_limit(limits))
}

/// Indexes of `entries` where a cut may fall: the entry there starts a user prompt or an
/// answer, and every tool call before it has its result before it, so no call is separated
/// from its result (a call whose result is nowhere stored counts as answered: the pairing of
/// `superpi_providers::history` gives it one).
pub(crate) fn cut_points(entries: &[Entry]) -> Vec<usize> {
    let messages: Vec<Message> = entries.iter().map(|e| e.message.clone()).collect();
    superpi_providers::history::closed_prefixes(&messages)
        .into_iter()
        .filter(|&i| i > 0 && matches!(messages[i].role, Role::User | Role::Assistant))
        .collect()
}

/// The text of a compaction entry: the summary under a line that says what it is, and the
/// user's latest prompt when the cut left it out.
pub(crate) fn summary_message(summary: &str, latest_prompt: Option<&str>) -> Message {
    let mut text = format!("{SUMMARY_PREAMBLE}\n\n{summary}");
    if let Some(prompt) = latest_prompt {
        text.push_str(&format!("\n\n[The user's latest request, as they wrote it:]\n{prompt}"));
    }
    Message::user_text(text)
}

const SUMMARY_PREAMBLE: &str = "[The earlier part of this conversation was compacted. A summary of it follows; \
the turns after it are as they happened.]";

/// `head_entry_id` of a compaction that keeps entries from `seq` on (`null`: none kept).
pub(crate) fn head_entry_id(first_kept: Option<u64>) -> Value {
    first_kept.map_or(Value::Null, Value::from)
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;

//! Stored entries as AG-UI messages, for `MESSAGES_SNAPSHOT`.
//!
//! Only what the model still reads: after the last compaction, its summary first as a system
//! message, then the recent entries it kept (from its `head_entry_id`, stored before it) and
//! the entries after it; after a clear (a compaction entry with no summary that kept
//! nothing), only the entries after it. Ids come from the entry's `seq` (`u12`, `a13`, ...);
//! tool results are named by their tool call (`tool-CALLID`), as the live renderer names
//! them, so a snapshot and a live stream agree.

use superpi_proto::{ContentBlock, Entry, EntryKind, Event, EventBody};

use crate::wire::{AguiMessage, ToolCallRef};

/// The message id of a tool call's result.
pub fn tool_message_id(tool_call_id: &str) -> String {
    format!("tool-{tool_call_id}")
}

/// The visible messages of a conversation's entries, in order. `last_compaction` is the
/// history's last `compaction_completed` event: it says which entries before the last
/// compaction entry the model still reads.
pub fn visible_messages(entries: &[Entry], last_compaction: Option<&Event>) -> Vec<AguiMessage> {
    in_context(entries, last_compaction).into_iter().flat_map(entry_messages).collect()
}

/// The messages one entry shows (none for a system entry); a compaction shows its summary (a
/// clear, which has none, shows nothing).
pub fn entry_messages(entry: &Entry) -> Vec<AguiMessage> {
    let mut out = Vec::new();
    let seq = entry.seq;
    let blocks = &entry.message.content;
    match entry.kind {
        EntryKind::User => {
            out.push(AguiMessage::User { id: format!("u{seq}"), content: entry.message.text() });
        }
        // A clear's entry holds nothing: nothing to show, only what follows it.
        EntryKind::Compaction if entry.message.text().trim().is_empty() => {}
        EntryKind::Compaction => {
            out.push(AguiMessage::System { id: format!("c{seq}"), content: entry.message.text() });
        }
        EntryKind::System => {}
        EntryKind::Assistant => {
            let thinking: String = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Thinking { thinking, redacted: false, .. } => Some(thinking.as_str()),
                    _ => None,
                })
                .collect();
            if !thinking.is_empty() {
                out.push(AguiMessage::Reasoning { id: format!("r{seq}"), content: thinking });
            }
            let text = entry.message.text();
            let tool_calls: Vec<ToolCallRef> = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolCall { id, name, arguments } => Some(ToolCallRef::new(id, name, arguments)),
                    _ => None,
                })
                .collect();
            if !text.is_empty() || !tool_calls.is_empty() {
                let content = (!text.is_empty()).then_some(text);
                out.push(AguiMessage::Assistant { id: format!("a{seq}"), content, tool_calls });
            }
        }
        EntryKind::ToolResult => {
            for block in blocks {
                if let ContentBlock::ToolResult { tool_call_id, output, is_error, .. } = block {
                    out.push(AguiMessage::Tool {
                        id: tool_message_id(tool_call_id),
                        content: output.clone(),
                        tool_call_id: tool_call_id.clone(),
                        error: is_error.then(|| output.clone()),
                    });
                }
            }
        }
    }
    out
}

/// The first entry the compaction stored at `compaction_seq` kept before itself: its event's
/// `head_entry_id`, when `last_compaction` is that compaction's event.
pub fn kept_from(compaction_seq: u64, last_compaction: Option<&Event>) -> Option<u64> {
    last_compaction.filter(|e| e.seq == compaction_seq).and_then(|e| match &e.body {
        EventBody::CompactionCompleted { head_entry_id, .. } => head_entry_id.as_u64(),
        _ => None,
    })
}

/// The entries the model reads, in the order it reads them: everything without a compaction;
/// else the last compaction entry, the entries it kept (from its event's `head_entry_id`, when
/// that event is the one of this entry), then those after it.
fn in_context<'a>(entries: &'a [Entry], last_compaction: Option<&Event>) -> Vec<&'a Entry> {
    let Some(at) = entries.iter().rposition(|e| e.kind == EntryKind::Compaction) else {
        return entries.iter().collect();
    };
    let compaction = &entries[at];
    let head = kept_from(compaction.seq, last_compaction);
    let kept = entries[..at].iter().filter(|e| e.kind != EntryKind::Compaction && head.is_some_and(|h| e.seq >= h));
    std::iter::once(compaction).chain(kept).chain(&entries[at + 1..]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use superpi_proto::{Message, Role};

    fn entry(seq: u64, kind: EntryKind, role: Role, content: Vec<ContentBlock>) -> Entry {
        Entry {
            seq,
            kind,
            turn_id: Some(1),
            message: Message { role, content, usage: None, stop_reason: None },
            created_at_ms: 0,
        }
    }

    #[test]
    fn a_turn_with_a_tool_call_reads_as_four_messages() {
        let entries = vec![
            entry(1, EntryKind::User, Role::User, vec![ContentBlock::text("list")]),
            entry(
                3,
                EntryKind::Assistant,
                Role::Assistant,
                vec![
                    ContentBlock::Thinking { thinking: "hmm".into(), signature: None, redacted: false },
                    ContentBlock::text("Looking."),
                    ContentBlock::ToolCall { id: "c1".into(), name: "ls".into(), arguments: json!({"path": "."}) },
                ],
            ),
            entry(
                6,
                EntryKind::ToolResult,
                Role::Tool,
                vec![ContentBlock::ToolResult {
                    tool_call_id: "c1".into(),
                    name: "ls".into(),
                    output: "a.txt".into(),
                    is_error: false,
                    structured: None,
                    details: None,
                }],
            ),
            entry(8, EntryKind::Assistant, Role::Assistant, vec![ContentBlock::text("One file.")]),
            entry(9, EntryKind::System, Role::System, vec![ContentBlock::text("internal")]),
        ];
        assert_eq!(
            visible_messages(&entries, None),
            vec![
                AguiMessage::User { id: "u1".into(), content: "list".into() },
                AguiMessage::Reasoning { id: "r3".into(), content: "hmm".into() },
                AguiMessage::Assistant {
                    id: "a3".into(),
                    content: Some("Looking.".into()),
                    tool_calls: vec![ToolCallRef::new("c1", "ls", &json!({"path": "."}))],
                },
                AguiMessage::Tool {
                    id: "tool-c1".into(),
                    content: "a.txt".into(),
                    tool_call_id: "c1".into(),
                    error: None
                },
                AguiMessage::Assistant { id: "a8".into(), content: Some("One file.".into()), tool_calls: vec![] },
            ]
        );
        let wire = serde_json::to_value(visible_messages(&entries, None)).unwrap();
        assert_eq!(
            wire[2],
            json!({"role": "assistant", "id": "a3", "content": "Looking.", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}
            ]})
        );
        assert_eq!(wire[3], json!({"role": "tool", "id": "tool-c1", "content": "a.txt", "toolCallId": "c1"}));
    }

    #[test]
    fn a_compaction_shows_its_summary_then_the_turns_it_kept() {
        let entries = vec![
            entry(1, EntryKind::User, Role::User, vec![ContentBlock::text("first")]),
            entry(2, EntryKind::Assistant, Role::Assistant, vec![ContentBlock::text("one")]),
            entry(4, EntryKind::Compaction, Role::System, vec![ContentBlock::text("older summary")]),
            entry(6, EntryKind::User, Role::User, vec![ContentBlock::text("kept")]),
            entry(7, EntryKind::Assistant, Role::Assistant, vec![ContentBlock::text("two")]),
            entry(9, EntryKind::Compaction, Role::System, vec![ContentBlock::text("summary")]),
            entry(10, EntryKind::User, Role::User, vec![ContentBlock::text("new")]),
        ];
        let mut event = Event::compaction_completed(1, None, json!(2), Some("summary".into()));
        event.seq = 9;
        assert_eq!(
            visible_messages(&entries, Some(&event)),
            vec![
                AguiMessage::System { id: "c9".into(), content: "summary".into() },
                AguiMessage::Assistant { id: "a2".into(), content: Some("one".into()), tool_calls: vec![] },
                AguiMessage::User { id: "u6".into(), content: "kept".into() },
                AguiMessage::Assistant { id: "a7".into(), content: Some("two".into()), tool_calls: vec![] },
                AguiMessage::User { id: "u10".into(), content: "new".into() },
            ]
        );
        // The event of another compaction (stored after this page was read) says nothing of this one.
        event.seq = 12;
        assert_eq!(visible_messages(&entries, Some(&event)).len(), 2);
    }

    #[test]
    fn a_compaction_that_kept_nothing_hides_what_came_before_it() {
        let entries = vec![
            entry(1, EntryKind::User, Role::User, vec![ContentBlock::text("old")]),
            entry(5, EntryKind::Compaction, Role::System, vec![ContentBlock::text("summary")]),
            entry(6, EntryKind::User, Role::User, vec![ContentBlock::text("new")]),
        ];
        assert_eq!(
            visible_messages(&entries, None),
            vec![
                AguiMessage::System { id: "c5".into(), content: "summary".into() },
                AguiMessage::User { id: "u6".into(), content: "new".into() },
            ]
        );
    }

    #[test]
    fn after_a_clear_only_what_follows_it_shows() {
        // `session.clear` stores an empty compaction entry (its event is `context_cleared`, so
        // the history's last compaction event is an older one, or none).
        let entries = vec![
            entry(1, EntryKind::User, Role::User, vec![ContentBlock::text("old")]),
            entry(2, EntryKind::Assistant, Role::Assistant, vec![ContentBlock::text("one")]),
            entry(4, EntryKind::Compaction, Role::User, vec![]),
        ];
        assert_eq!(visible_messages(&entries, None), vec![]);
        let mut more = entries.clone();
        more.push(entry(5, EntryKind::User, Role::User, vec![ContentBlock::text("new")]));
        assert_eq!(visible_messages(&more, None), vec![AguiMessage::User { id: "u5".into(), content: "new".into() }]);
        assert_eq!(entry_messages(&entries[2]), vec![]);
    }

    #[test]
    fn a_snapshot_written_message_by_message_is_the_event_whole() {
        let entries = vec![
            entry(1, EntryKind::User, Role::User, vec![ContentBlock::text("a \"quoted\"\nline")]),
            entry(2, EntryKind::Assistant, Role::Assistant, vec![ContentBlock::text("b")]),
        ];
        let messages = visible_messages(&entries, None);
        let (before, after) = crate::wire::AguiEvent::messages_snapshot_frame();
        let parts: Vec<String> = messages.iter().map(|m| serde_json::to_string(m).unwrap()).collect();
        let written = format!("{before}{}{after}", parts.join(","));
        assert_eq!(written, crate::wire::AguiEvent::MessagesSnapshot { messages }.to_json());
        assert!(!written.contains('\n'), "one data: line");
        assert_eq!(format!("{before}{after}"), crate::wire::AguiEvent::MessagesSnapshot { messages: vec![] }.to_json());
    }
}

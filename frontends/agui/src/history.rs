//! Stored entries as AG-UI messages, for `MESSAGES_SNAPSHOT`.
//!
//! Only what a person sees: the entries after the last compaction, with the compaction's
//! summary first as a system message. Ids come from the entry's `seq` (`u12`, `a13`, ...);
//! tool results are named by their tool call (`tool-CALLID`), as the live renderer names
//! them, so a snapshot and a live stream agree.

use superpi_proto::{ContentBlock, Entry, EntryKind};

use crate::wire::{AguiMessage, ToolCallRef};

/// The message id of a tool call's result.
pub fn tool_message_id(tool_call_id: &str) -> String {
    format!("tool-{tool_call_id}")
}

/// The visible messages of a conversation's entries, in order.
pub fn visible_messages(entries: &[Entry]) -> Vec<AguiMessage> {
    let start = entries.iter().rposition(|e| e.kind == EntryKind::Compaction).unwrap_or(0);
    let mut out = Vec::new();
    for entry in &entries[start..] {
        let seq = entry.seq;
        let blocks = &entry.message.content;
        match entry.kind {
            EntryKind::User => {
                out.push(AguiMessage::User { id: format!("u{seq}"), content: entry.message.text() });
            }
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
    }
    out
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
            visible_messages(&entries),
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
        let wire = serde_json::to_value(visible_messages(&entries)).unwrap();
        assert_eq!(
            wire[2],
            json!({"role": "assistant", "id": "a3", "content": "Looking.", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}
            ]})
        );
        assert_eq!(wire[3], json!({"role": "tool", "id": "tool-c1", "content": "a.txt", "toolCallId": "c1"}));
    }

    #[test]
    fn a_compaction_hides_what_came_before_it() {
        let entries = vec![
            entry(1, EntryKind::User, Role::User, vec![ContentBlock::text("old")]),
            entry(5, EntryKind::Compaction, Role::System, vec![ContentBlock::text("summary")]),
            entry(6, EntryKind::User, Role::User, vec![ContentBlock::text("new")]),
        ];
        assert_eq!(
            visible_messages(&entries),
            vec![
                AguiMessage::System { id: "c5".into(), content: "summary".into() },
                AguiMessage::User { id: "u6".into(), content: "new".into() },
            ]
        );
    }
}

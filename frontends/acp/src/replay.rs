//! Replay of a stored conversation for `session/load`: its entries as the session updates
//! an editor would have seen, each tool call once with its final status.

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallStatus,
};
use serde_json::Value;
use superpi_proto::{ContentBlock as KBlock, Entry, EntryKind, Event, EventBody, ToolDef};

use crate::tools::{self, ToolFacts};

fn chunk(s: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(s)))
}

struct Result<'a> {
    is_error: bool,
    output: &'a str,
    structured: Option<&'a Value>,
}

/// The updates that replay `entries` (in order), and the latest plan (`last_plan`, a
/// `plan_updated` event) where it was made: after the entries stored before it. A tool call
/// without a stored result (its turn was cancelled or interrupted) shows as failed.
pub fn replay(
    entries: &[Entry],
    last_plan: Option<&Event>,
    workspace: Option<&Path>,
    tools: &ToolFacts,
) -> Vec<SessionUpdate> {
    let mut results: HashMap<&str, Result<'_>> = HashMap::new();
    for entry in entries {
        for block in &entry.message.content {
            if let KBlock::ToolResult { tool_call_id, output, is_error, structured, .. } = block {
                results.insert(
                    tool_call_id.as_str(),
                    Result { is_error: *is_error, output: output.as_str(), structured: structured.as_ref() },
                );
            }
        }
    }
    let mut plan = last_plan.and_then(|event| match &event.body {
        EventBody::PlanUpdated { entries } => Some((event.seq, crate::render::plan(entries))),
        _ => None,
    });
    let mut out = Vec::new();
    for entry in entries {
        if let Some((_, update)) = plan.take_if(|(seq, _)| *seq < entry.seq) {
            out.push(update);
        }
        match entry.kind {
            EntryKind::User => {
                for block in &entry.message.content {
                    if let KBlock::Text { text } = block
                        && !text.is_empty()
                    {
                        out.push(SessionUpdate::UserMessageChunk(chunk(text)));
                    }
                }
            }
            EntryKind::Assistant => {
                for block in &entry.message.content {
                    match block {
                        KBlock::Text { text } if !text.is_empty() => {
                            out.push(SessionUpdate::AgentMessageChunk(chunk(text)));
                        }
                        KBlock::Thinking { thinking, redacted: false, .. } if !thinking.is_empty() => {
                            out.push(SessionUpdate::AgentThoughtChunk(chunk(thinking)));
                        }
                        KBlock::ToolCall { id, name, arguments } => {
                            let shown = Shown { workspace, def: tools.get(name) };
                            out.push(SessionUpdate::ToolCall(shown.call(
                                id,
                                name,
                                arguments,
                                results.get(id.as_str()),
                            )));
                        }
                        _ => {}
                    }
                }
            }
            EntryKind::ToolResult | EntryKind::System | EntryKind::Compaction => {}
        }
    }
    out.extend(plan.map(|(_, update)| update));
    out
}

/// How one replayed call is shown: the session's workspace and the tool's facts.
struct Shown<'a> {
    workspace: Option<&'a Path>,
    def: Option<&'a ToolDef>,
}

impl Shown<'_> {
    fn call(&self, id: &str, name: &str, args: &Value, result: Option<&Result<'_>>) -> ToolCall {
        let (workspace, def) = (self.workspace, self.def);
        let call = ToolCall::new(id.to_string(), tools::title(name, def, args))
            .kind(tools::kind(def))
            .locations(tools::locations(workspace, def, args))
            .raw_input(args.clone());
        let Some(result) = result else {
            return call.status(ToolCallStatus::Failed);
        };
        let mut content = if result.is_error { Vec::new() } else { tools::diffs(workspace, def, args) };
        if content.is_empty() && !result.output.is_empty() {
            content.push(ToolCallContent::from(ContentBlock::Text(TextContent::new(tools::truncate(
                result.output.to_string(),
                tools::MAX_SHOWN_OUTPUT,
            )))));
        }
        let raw_output = result.structured.cloned().unwrap_or_else(|| Value::String(result.output.to_string()));
        call.status(if result.is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed })
            .content(content)
            .raw_output(raw_output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{Diff, ToolCallLocation, ToolKind};
    use serde_json::json;
    use superpi_proto::{Message, Role};

    fn entry(seq: u64, kind: EntryKind, role: Role, content: Vec<KBlock>) -> Entry {
        Entry {
            seq,
            kind,
            turn_id: Some(1),
            message: Message { role, content, usage: None, stop_reason: None },
            created_at_ms: 0,
        }
    }

    #[test]
    fn replays_messages_and_tool_calls_with_final_status() {
        let write_args = json!({"path": "a.txt", "content": "x"});
        let entries = vec![
            entry(1, EntryKind::User, Role::User, vec![KBlock::text("write a file")]),
            entry(
                4,
                EntryKind::Assistant,
                Role::Assistant,
                vec![
                    KBlock::Thinking { thinking: "ok".into(), signature: None, redacted: false },
                    KBlock::text("Writing."),
                    KBlock::ToolCall { id: "c1".into(), name: "write".into(), arguments: write_args.clone() },
                    KBlock::ToolCall { id: "c2".into(), name: "bash".into(), arguments: json!({"command": "false"}) },
                    KBlock::ToolCall { id: "c3".into(), name: "ls".into(), arguments: json!({}) },
                ],
            ),
            entry(
                7,
                EntryKind::ToolResult,
                Role::Tool,
                vec![
                    KBlock::ToolResult {
                        tool_call_id: "c1".into(),
                        name: "write".into(),
                        output: "wrote".into(),
                        is_error: false,
                        structured: None,
                        details: None,
                    },
                    KBlock::ToolResult {
                        tool_call_id: "c2".into(),
                        name: "bash".into(),
                        output: "exit 1".into(),
                        is_error: true,
                        structured: Some(json!({"exit_code": 1})),
                        details: None,
                    },
                ],
            ),
            entry(9, EntryKind::Assistant, Role::Assistant, vec![KBlock::text("Done.")]),
        ];
        let ws = Path::new("/ws");
        assert_eq!(
            replay(&entries, None, Some(ws), &ToolFacts::new(superpi_sandbox::ToolRegistry::builtin().defs())),
            vec![
                SessionUpdate::UserMessageChunk(chunk("write a file")),
                SessionUpdate::AgentThoughtChunk(chunk("ok")),
                SessionUpdate::AgentMessageChunk(chunk("Writing.")),
                SessionUpdate::ToolCall(
                    ToolCall::new("c1", "Write a.txt")
                        .kind(ToolKind::Edit)
                        .locations(vec![ToolCallLocation::new("/ws/a.txt")])
                        .raw_input(write_args)
                        .status(ToolCallStatus::Completed)
                        .content(vec![ToolCallContent::Diff(Diff::new("/ws/a.txt", "x"))])
                        .raw_output(json!("wrote"))
                ),
                SessionUpdate::ToolCall(
                    ToolCall::new("c2", "Run `false`")
                        .kind(ToolKind::Execute)
                        .raw_input(json!({"command": "false"}))
                        .status(ToolCallStatus::Failed)
                        .content(vec![ToolCallContent::from(ContentBlock::Text(TextContent::new("exit 1")))])
                        .raw_output(json!({"exit_code": 1}))
                ),
                SessionUpdate::ToolCall(
                    ToolCall::new("c3", "List .")
                        .kind(ToolKind::Read)
                        .raw_input(json!({}))
                        .status(ToolCallStatus::Failed)
                ),
                SessionUpdate::AgentMessageChunk(chunk("Done.")),
            ]
        );
    }

    #[test]
    fn the_latest_plan_is_replayed_where_it_was_made() {
        let entries = vec![
            entry(1, EntryKind::User, Role::User, vec![KBlock::text("plan it")]),
            entry(6, EntryKind::Assistant, Role::Assistant, vec![KBlock::text("Planned.")]),
        ];
        let steps = vec![superpi_proto::PlanEntry { id: "1".into(), text: "read".into(), completed: false }];
        let mut event = Event::plan_updated(1, Some(1), steps.clone());
        event.seq = 4;
        let tools = ToolFacts::new(Vec::new());
        let user = SessionUpdate::UserMessageChunk(chunk("plan it"));
        let answer = SessionUpdate::AgentMessageChunk(chunk("Planned."));
        let plan = crate::render::plan(&steps);
        assert_eq!(replay(&entries, Some(&event), None, &tools), vec![user.clone(), plan.clone(), answer.clone()]);
        // A plan made after every entry (the turn was cut short) comes last.
        event.seq = 9;
        assert_eq!(replay(&entries, Some(&event), None, &tools), vec![user, answer, plan]);
    }
}

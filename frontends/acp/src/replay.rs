//! Replay of a stored conversation for `session/load`: its entries as the session updates
//! an editor would have seen, each tool call once with its final status.

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

/// An update held back in order: ready, or a tool call waiting for its result.
enum Held {
    Ready(Box<SessionUpdate>),
    Call { id: String, name: String, arguments: Value },
}

/// A replay fed entry by entry (page by page from the store), so that only the updates
/// since the oldest tool call still waiting for its result are held, never the history.
/// Each call is shown once, with its final status: the updates from a call on wait until its
/// result comes, or until the next prompt or the end, where a call without a stored result
/// (its turn was cancelled or interrupted) shows as failed. The latest plan (`last_plan`, a
/// `plan_updated` event) goes where it was made: after the entries stored before it.
pub struct Replay<'a> {
    workspace: Option<&'a Path>,
    tools: &'a ToolFacts,
    held: Vec<Held>,
    /// Held calls still without a result.
    waiting: usize,
    /// The plan's seq and update, until it is placed.
    plan: Option<(u64, SessionUpdate)>,
}

impl<'a> Replay<'a> {
    pub fn new(last_plan: Option<&Event>, workspace: Option<&'a Path>, tools: &'a ToolFacts) -> Self {
        let plan = last_plan.and_then(|event| match &event.body {
            EventBody::PlanUpdated { entries } => Some((event.seq, crate::render::plan(entries))),
            _ => None,
        });
        Replay { workspace, tools, held: Vec::new(), waiting: 0, plan }
    }

    /// The updates that can go out once `entry` is read.
    pub fn push(&mut self, entry: &Entry) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        if entry.kind == EntryKind::User {
            self.release(&mut out);
        }
        if let Some((_, plan)) = self.plan.take_if(|(seq, _)| *seq < entry.seq) {
            self.hold(Held::Ready(Box::new(plan)), &mut out);
        }
        for block in &entry.message.content {
            if let KBlock::ToolResult { tool_call_id, output, is_error, structured, .. } = block {
                let result = Result { is_error: *is_error, output: output.as_str(), structured: structured.as_ref() };
                self.resolve(tool_call_id, &result);
            }
        }
        for update in self.updates(entry) {
            self.hold(update, &mut out);
        }
        if self.waiting == 0 {
            self.release(&mut out);
        }
        out
    }

    /// What is still held, its calls failed, and a plan made after every entry (the turn was
    /// cut short).
    pub fn finish(mut self) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        self.release(&mut out);
        out.extend(self.plan.take().map(|(_, plan)| plan));
        out
    }

    fn shown(&self, name: &str) -> Shown<'a> {
        Shown { workspace: self.workspace, def: self.tools.get(name) }
    }

    fn hold(&mut self, held: Held, out: &mut Vec<SessionUpdate>) {
        match held {
            Held::Ready(update) if self.held.is_empty() => out.push(*update),
            Held::Call { .. } => {
                self.waiting += 1;
                self.held.push(held);
            }
            ready => self.held.push(ready),
        }
    }

    fn resolve(&mut self, tool_call_id: &str, result: &Result<'_>) {
        let found = self.held.iter().position(|h| matches!(h, Held::Call { id, .. } if id == tool_call_id));
        if let Some(i) = found
            && let Held::Call { id, name, arguments } = &self.held[i]
        {
            let update = SessionUpdate::ToolCall(self.shown(name).call(id, name, arguments, Some(result)));
            self.held[i] = Held::Ready(Box::new(update));
            self.waiting -= 1;
        }
    }

    /// Sends everything held, in order; a call still waiting has failed.
    fn release(&mut self, out: &mut Vec<SessionUpdate>) {
        for held in self.held.drain(..) {
            out.push(match held {
                Held::Ready(update) => *update,
                Held::Call { id, name, arguments } => {
                    let shown = Shown { workspace: self.workspace, def: self.tools.get(&name) };
                    SessionUpdate::ToolCall(shown.call(&id, &name, &arguments, None))
                }
            });
        }
        self.waiting = 0;
    }

    /// The updates of one entry: its prompt text, or its answer, thinking and tool calls.
    fn updates(&self, entry: &Entry) -> Vec<Held> {
        let mut out = Vec::new();
        match entry.kind {
            EntryKind::User => {
                for block in &entry.message.content {
                    if let KBlock::Text { text } = block
                        && !text.is_empty()
                    {
                        out.push(Held::Ready(Box::new(SessionUpdate::UserMessageChunk(chunk(text)))));
                    }
                }
            }
            EntryKind::Assistant => {
                for block in &entry.message.content {
                    match block {
                        KBlock::Text { text } if !text.is_empty() => {
                            out.push(Held::Ready(Box::new(SessionUpdate::AgentMessageChunk(chunk(text)))));
                        }
                        KBlock::Thinking { thinking, redacted: false, .. } if !thinking.is_empty() => {
                            out.push(Held::Ready(Box::new(SessionUpdate::AgentThoughtChunk(chunk(thinking)))));
                        }
                        KBlock::ToolCall { id, name, arguments } => {
                            out.push(Held::Call { id: id.clone(), name: name.clone(), arguments: arguments.clone() })
                        }
                        _ => {}
                    }
                }
            }
            EntryKind::ToolResult | EntryKind::System | EntryKind::Compaction => {}
        }
        out
    }
}

/// The updates that replay `entries` (in order) and the latest plan, all at once.
pub fn replay(
    entries: &[Entry],
    last_plan: Option<&Event>,
    workspace: Option<&Path>,
    tools: &ToolFacts,
) -> Vec<SessionUpdate> {
    let mut replay = Replay::new(last_plan, workspace, tools);
    let mut out: Vec<SessionUpdate> = entries.iter().flat_map(|e| replay.push(e)).collect();
    out.extend(replay.finish());
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
    fn fed_entry_by_entry_it_holds_only_what_follows_a_call_still_waiting() {
        let tools = ToolFacts::new(superpi_sandbox::ToolRegistry::builtin().defs());
        let mut replay = Replay::new(None, None, &tools);
        let call =
            |id: &str| KBlock::ToolCall { id: id.into(), name: "bash".into(), arguments: json!({"command": "true"}) };
        let result = KBlock::ToolResult {
            tool_call_id: "c1".into(),
            name: "bash".into(),
            output: "ok".into(),
            is_error: false,
            structured: None,
            details: None,
        };
        let status = |u: &SessionUpdate| match u {
            SessionUpdate::ToolCall(t) => Some(t.status),
            _ => None,
        };
        assert_eq!(replay.push(&entry(1, EntryKind::User, Role::User, vec![KBlock::text("go")])).len(), 1);
        // A call waits for its result, and what follows it waits with it.
        assert!(replay.push(&entry(2, EntryKind::Assistant, Role::Assistant, vec![call("c1")])).is_empty());
        assert!(replay.push(&entry(3, EntryKind::Assistant, Role::Assistant, vec![KBlock::text("and")])).is_empty());
        let out = replay.push(&entry(4, EntryKind::ToolResult, Role::Tool, vec![result]));
        assert_eq!(out.iter().map(status).collect::<Vec<_>>(), [Some(ToolCallStatus::Completed), None]);
        // A call without a result fails at the next prompt, before it.
        assert!(replay.push(&entry(5, EntryKind::Assistant, Role::Assistant, vec![call("c2")])).is_empty());
        let out = replay.push(&entry(6, EntryKind::User, Role::User, vec![KBlock::text("next")]));
        assert_eq!(out.iter().map(status).collect::<Vec<_>>(), [Some(ToolCallStatus::Failed), None]);
        assert!(replay.push(&entry(7, EntryKind::Assistant, Role::Assistant, vec![call("c3")])).is_empty());
        assert_eq!(replay.finish().iter().map(status).collect::<Vec<_>>(), [Some(ToolCallStatus::Failed)]);
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

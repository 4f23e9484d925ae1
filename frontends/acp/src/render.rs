//! The renderer: kernel events in, ACP session updates and agent-side actions out.
//!
//! A synchronous state machine with no I/O: [`Renderer::render`] takes one kernel event and
//! returns what the agent must do about it, in order. The agent wraps each
//! [`Out::Update`] in a `session/update` notification, turns [`Out::AskPermission`] into a
//! `session/request_permission` request, and answers a waiting `session/prompt` on
//! [`Out::TurnEnded`].
//!
//! Over 500 lines on purpose: the state machine is one `match` over the kernel's event types,
//! as AG-UI's renderer is; its tests are in a file of their own.

use std::collections::HashMap;

use superpi_proto::question::QuestionRequest;

use crate::questions::question_request;
use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    CompactionStatus, CompactionUpdate, ContentBlock, ContentChunk, Cost, CurrentModeUpdate, Notice, NoticeSeverity,
    PermissionOption, PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, ResourceLink,
    SessionModeId, SessionUpdate, StopReason, TextContent, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::Value;
use superpi_proto::{ContentBlock as KBlock, Event, EventBody, Role};

use crate::buffers::{EditorBuffers, ReadRequest, read_request};
use crate::tools::{self, ToolFacts};

/// What the agent does with one rendered item.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// Send as a `session/update` notification.
    Update(SessionUpdate),
    /// Ask the editor (`session/request_permission`); the answer goes to `permission.respond`
    /// with `request_id`.
    AskPermission { request_id: String, tool_call: ToolCallUpdate, options: Vec<PermissionOption> },
    /// The kernel settled a question (answered elsewhere, timed out, cancelled): withdraw it.
    QuestionClosed { request_id: String },
    /// A turn ended: a `session/prompt` waiting for it answers with this stop reason.
    TurnEnded { turn_id: Option<i64>, stop_reason: StopReason },
    /// A prompt joined the running turn `turn_id` (it steered it): the `session/prompt` that
    /// waited for that turn before it answers `end_turn`, the steering one waits on.
    PromptJoined { turn_id: i64 },
    /// The kernel asks for a file's text: read it from the editor (`fs/read_text_file`) and
    /// answer `ui.respond`. Never shown to the person.
    ReadFile(ReadRequest),
    /// The model asks the person (`ask_question`): an `elicitation/create` form, or refused
    /// when the editor takes no forms (`questions.rs`); the answer goes to `ui.respond`.
    AskQuestion { request_id: String, request: QuestionRequest },
    /// The kernel asks the person to open a URL (an MCP server's login): an
    /// `elicitation/create` in URL mode, sent only when the editor declared `elicitation.url`.
    OpenUrl { request_id: String, url: String, message: String },
    /// That login ended well: `elicitation/complete`.
    UrlDone { request_id: String },
}

/// Settings of a renderer that come from the session and the editor.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// The session's workspace root: relative tool paths resolve against it.
    pub workspace: Option<PathBuf>,
    /// Context window size reported in `usage_update` when the kernel's event does not say it.
    pub context_window: u64,
    /// The editor advertised `session.notices`: notices go out as `notice` updates rather
    /// than as thought chunks.
    pub notices: bool,
    /// The editor advertised `session.compaction`: a compaction goes out as a
    /// `compaction_update` with its summary.
    pub compaction: bool,
    /// This agent answers the kernel's file-read questions, in this mode (the editor
    /// advertised `fs.readTextFile` and the mode is not `never`).
    pub editor_reads: Option<EditorBuffers>,
    /// The editor advertised `elicitation.form`: the model's questions go out as forms.
    pub elicits: bool,
    /// The editor advertised `elicitation.url`: a login's URL goes out to be opened.
    pub opens_urls: bool,
    /// The facts of the session's tools (`tool.list`), which say how a call is shown.
    pub tools: ToolFacts,
    /// Where the kernel keeps artifacts (`DATA_DIR/artifacts`): an `artifact_created` is a
    /// `resource_link` to the file there, which the editor (this user's) can open.
    pub artifacts: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Stream {
    Text,
    Thinking,
}

#[derive(Debug, Default)]
struct ToolState {
    name: String,
    args: Value,
    output: String,
}

/// Kernel events to ACP updates, for one session.
#[derive(Debug, Default)]
pub struct Renderer {
    opts: RenderOptions,
    /// Text streamed so far per content block of the message being generated.
    streamed: HashMap<(Stream, u32), String>,
    /// After a `stream_reset`, text already shown that the retried stream will repeat.
    shown: HashMap<(Stream, u32), String>,
    /// Tool calls announced to the editor and not yet finished.
    tools: HashMap<String, ToolState>,
    /// The calls of the message being generated by block index (a call's later argument
    /// deltas name only its index).
    streaming_calls: HashMap<u32, String>,
    /// Deltas are shown only from the start of a message on: a watch that joins in the
    /// middle of one waits for the completed message, which carries all of its text.
    synced: bool,
    /// The turn started and not yet ended: a user message in it is a steering prompt.
    started_turn: Option<i64>,
}

fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(s))
}

fn chunk(s: impl Into<String>) -> ContentChunk {
    ContentChunk::new(text(s))
}

/// The ACP option kind of a kernel option (`kind` is ACP's PermissionOptionKind already).
fn option_kind(kind: &str) -> Option<PermissionOptionKind> {
    Some(match kind {
        "allow_once" => PermissionOptionKind::AllowOnce,
        "allow_always" => PermissionOptionKind::AllowAlways,
        "reject_once" => PermissionOptionKind::RejectOnce,
        "reject_always" => PermissionOptionKind::RejectAlways,
        _ => return None,
    })
}

/// The stop reason of a `turn_completed`.
pub fn stop_reason(kernel: &str) -> StopReason {
    match kernel {
        "max_tokens" => StopReason::MaxTokens,
        "max_turn_requests" | "max_turns" => StopReason::MaxTurnRequests,
        "refusal" => StopReason::Refusal,
        "cancelled" => StopReason::Cancelled,
        _ => StopReason::EndTurn,
    }
}

impl Renderer {
    pub fn new(opts: RenderOptions) -> Self {
        Renderer { opts, ..Default::default() }
    }

    pub fn options(&self) -> &RenderOptions {
        &self.opts
    }

    /// Renders one kernel event.
    pub fn render(&mut self, event: &Event) -> Vec<Out> {
        let mut out = Vec::new();
        match &event.body {
            EventBody::TurnStarted {} => {
                self.started_turn = event.turn_id;
                self.streaming_calls.clear();
                self.streamed.clear();
                self.shown.clear();
                self.synced = true;
            }
            EventBody::TextDelta { .. } | EventBody::ThinkingDelta { .. } if !self.synced => {}
            EventBody::TextDelta { index, delta } => self.delta(Stream::Text, *index, delta, &mut out),
            EventBody::ThinkingDelta { index, delta } => self.delta(Stream::Thinking, *index, delta, &mut out),
            EventBody::ToolcallDelta { index, id: Some(id), name: Some(name), partial_args, .. }
                if !self.tools.contains_key(id) =>
            {
                self.streaming_calls.insert(*index, id.clone());
                out.push(self.announce(id, name, partial_args, ToolCallStatus::Pending));
            }
            // The arguments so far (the kernel sends them now and then): the editor shows the
            // call, a write's text included, as it is generated.
            EventBody::ToolcallDelta { index, partial_args, .. } if !partial_args.is_null() => {
                if let Some(update) = self.streaming_args(*index, partial_args) {
                    out.push(update);
                }
            }
            EventBody::ToolcallDelta { .. } => {}
            EventBody::MessageCompleted { role: Role::Assistant, content, .. } => {
                self.streaming_calls.clear();
                self.completed(content, &mut out)
            }
            // The editor shows the prompt it sent; other roles are not shown live.
            EventBody::MessageCompleted { role: Role::User, .. }
                if event.turn_id.is_some() && event.turn_id == self.started_turn =>
            {
                self.synced = true;
                out.extend(event.turn_id.map(|turn_id| Out::PromptJoined { turn_id }));
            }
            EventBody::MessageCompleted { .. } => self.synced = true,
            EventBody::StreamReset { .. } => {
                self.streaming_calls.clear();
                // The retried stream starts over: what was shown stays shown, and the
                // repeated prefix is skipped when it comes again.
                for (key, text) in self.streamed.drain() {
                    self.shown.entry(key).or_default().push_str(&text);
                }
            }
            EventBody::ToolStarted { tool_call_id, name, arguments, overwritten_keys } => {
                let meta = rewritten(overwritten_keys);
                if self.tools.contains_key(tool_call_id) {
                    let fields = self
                        .tool_fields(name, arguments)
                        .status(ToolCallStatus::InProgress)
                        .raw_input(arguments.clone());
                    self.remember(tool_call_id, name, arguments);
                    out.push(Out::Update(SessionUpdate::ToolCallUpdate(
                        ToolCallUpdate::new(tool_call_id.clone(), fields).meta(meta),
                    )));
                } else {
                    let mut announced = self.announce(tool_call_id, name, arguments, ToolCallStatus::InProgress);
                    if let (Out::Update(SessionUpdate::ToolCall(call)), Some(meta)) = (&mut announced, meta) {
                        *call = call.clone().meta(meta);
                    }
                    out.push(announced);
                }
            }
            EventBody::ToolOutput { tool_call_id, name, chunk } => {
                let state = self
                    .tools
                    .entry(tool_call_id.clone())
                    .or_insert_with(|| ToolState { name: name.clone(), ..Default::default() });
                state.output.push_str(chunk);
                keep_tail(&mut state.output, tools::MAX_SHOWN_OUTPUT);
                let fields =
                    ToolCallUpdateFields::new().content(vec![ToolCallContent::from(text(state.output.clone()))]);
                out.push(Out::Update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(tool_call_id.clone(), fields))));
            }
            EventBody::ToolBlocked { tool_call_id, reason, .. } => {
                let fields = ToolCallUpdateFields::new()
                    .content(vec![ToolCallContent::from(text(format!("Blocked: {reason}")))]);
                out.push(Out::Update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(tool_call_id.clone(), fields))));
            }
            EventBody::ToolCompleted { tool_call_id, name, is_error, output, structured, .. } => {
                let state = self.tools.remove(tool_call_id);
                let args = state.as_ref().map(|s| s.args.clone()).unwrap_or(Value::Null);
                let status = if *is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
                let def = self.opts.tools.get(name);
                let mut content =
                    if *is_error { Vec::new() } else { tools::diffs(self.opts.workspace.as_deref(), def, &args) };
                if content.is_empty() {
                    let shown = tools::output_text(output);
                    if !shown.is_empty() {
                        content.push(ToolCallContent::from(text(shown)));
                    }
                }
                let raw_output = structured.clone().unwrap_or_else(|| output.clone());
                if state.is_some() {
                    let fields = ToolCallUpdateFields::new().status(status).content(content).raw_output(raw_output);
                    out.push(Out::Update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        tool_call_id.clone(),
                        fields,
                    ))));
                } else {
                    // Never announced (the watch began mid-call): show it whole.
                    let call = ToolCall::new(tool_call_id.clone(), tools::title(name, def, &args))
                        .kind(tools::kind(def))
                        .status(status)
                        .content(content)
                        .raw_output(raw_output);
                    out.push(Out::Update(SessionUpdate::ToolCall(call)));
                }
            }
            EventBody::PermissionRequest {
                request_id, tool_call_id, tool_name, arguments, reason, options, ..
            } => {
                let mut content = vec![ToolCallContent::from(text(reason.clone()))];
                content.extend(tools::diffs(self.opts.workspace.as_deref(), self.opts.tools.get(tool_name), arguments));
                let fields = self
                    .tool_fields(tool_name, arguments)
                    .status(ToolCallStatus::Pending)
                    .content(content)
                    .raw_input(arguments.clone());
                let options = options
                    .iter()
                    .filter_map(|o| {
                        option_kind(&o.kind)
                            .map(|kind| PermissionOption::new(o.option_id.clone(), o.name.as_str(), kind))
                    })
                    .collect();
                out.push(Out::AskPermission {
                    request_id: request_id.clone(),
                    tool_call: ToolCallUpdate::new(tool_call_id.clone(), fields),
                    options,
                });
            }
            EventBody::UiRequest { request_id, request } => {
                // Only file-read questions, and only when this agent said it answers them:
                // another frontend may be the one that does.
                if self.opts.editor_reads.is_some()
                    && let Some(read) = read_request(request_id, request)
                {
                    out.push(Out::ReadFile(read));
                } else if let Some(question) = question_request(request) {
                    out.push(Out::AskQuestion { request_id: request_id.clone(), request: question });
                } else if let Some((url, message)) =
                    crate::questions::url_request(request).filter(|_| self.opts.opens_urls)
                {
                    out.push(Out::OpenUrl { request_id: request_id.clone(), url, message });
                }
            }
            EventBody::UiResolved { request_id, outcome } => {
                out.push(Out::QuestionClosed { request_id: request_id.clone() });
                if self.opts.opens_urls && outcome.get("outcome").and_then(Value::as_str) == Some("logged_in") {
                    out.push(Out::UrlDone { request_id: request_id.clone() });
                }
            }
            EventBody::ModeChanged { mode, .. } => {
                out.push(Out::Update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(SessionModeId::new(
                    mode.as_str(),
                )))));
            }
            EventBody::UsageUpdated {
                input_tokens,
                output_tokens,
                context_tokens,
                context_window,
                total_cost_usd,
                ..
            } => {
                // The kernel's count of the context and the model's window; older kernels
                // said neither, and then the last call's tokens and the flag stand in. The
                // cost is the conversation's so far, in US dollars, when its calls were priced.
                let update = UsageUpdate::new(
                    context_tokens.unwrap_or(input_tokens + output_tokens),
                    context_window.unwrap_or(self.opts.context_window),
                )
                .cost(total_cost_usd.map(|usd| Cost::new(usd, "USD")));
                out.push(Out::Update(SessionUpdate::UsageUpdate(update)));
            }
            EventBody::PlanUpdated { entries } => out.push(Out::Update(plan(entries))),
            EventBody::ArtifactCreated { name, bytes, media_type, .. } => {
                let path =
                    self.opts.artifacts.as_ref().map(|dir| dir.join(event.conversation_id.to_string()).join(name));
                let uri = match path {
                    Some(path) => format!("file://{}", path.display()),
                    None => format!("superpi://artifact/{}/{name}", event.conversation_id),
                };
                let link = ResourceLink::new(name.as_str(), uri)
                    .mime_type(media_type.clone())
                    .size(i64::try_from(*bytes).ok());
                let block = ContentBlock::ResourceLink(link);
                out.push(Out::Update(SessionUpdate::AgentMessageChunk(ContentChunk::new(block))));
            }
            EventBody::Notice { level, message } => {
                if self.opts.notices {
                    let severity = match level.as_str() {
                        "warning" | "warn" => NoticeSeverity::Warning,
                        "error" => NoticeSeverity::Error,
                        _ => NoticeSeverity::Info,
                    };
                    out.push(Out::Update(SessionUpdate::Notice(Notice::new(severity, message.as_str()))));
                } else {
                    out.push(Out::Update(SessionUpdate::AgentThoughtChunk(chunk(format!("[{level}] {message}\n")))));
                }
            }
            EventBody::Handoff { from, to, summary } => {
                let said = format!("handed from {from} to {to}: {}", summary.as_deref().unwrap_or(""));
                match self.opts.notices {
                    true => out.push(Out::Update(SessionUpdate::Notice(Notice::new(NoticeSeverity::Info, said)))),
                    false => {
                        out.push(Out::Update(SessionUpdate::AgentThoughtChunk(chunk(format!("[handoff] {said}\n")))))
                    }
                }
            }
            EventBody::SubagentStarted { child_conversation_id, role, task } => {
                let call = ToolCall::new(format!("subagent-{child_conversation_id}"), format!("{role}: {task}"))
                    .kind(ToolKind::Other)
                    .status(ToolCallStatus::InProgress);
                out.push(Out::Update(SessionUpdate::ToolCall(call)));
            }
            EventBody::SubagentFinished { child_conversation_id, status, summary } => {
                let ok = matches!(status.as_str(), "completed" | "ok" | "done");
                let mut fields = ToolCallUpdateFields::new().status(if ok {
                    ToolCallStatus::Completed
                } else {
                    ToolCallStatus::Failed
                });
                if let Some(summary) = summary {
                    fields = fields.content(vec![ToolCallContent::from(text(summary.clone()))]);
                }
                out.push(Out::Update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    format!("subagent-{child_conversation_id}"),
                    fields,
                ))));
            }
            EventBody::TurnCompleted { stop_reason: reason, .. } => {
                self.end_turn(event.turn_id, stop_reason(reason), &mut out);
            }
            EventBody::TurnError { error } => {
                out.push(Out::Update(SessionUpdate::AgentMessageChunk(chunk(format!("\n\nError: {error}")))));
                self.end_turn(event.turn_id, StopReason::Refusal, &mut out);
            }
            EventBody::TurnCancelled {} => self.end_turn(event.turn_id, StopReason::Cancelled, &mut out),
            EventBody::CompactionCompleted { summary, .. } if self.opts.compaction => {
                // One upsert per compaction, done when the kernel says it: its id is the event's.
                let summary = summary.iter().map(|s| ContentBlock::Text(TextContent::new(s.as_str()))).collect();
                let id = format!("compaction-{}", event.seq);
                out.push(Out::Update(SessionUpdate::CompactionUpdate(
                    CompactionUpdate::new(id, CompactionStatus::Completed).summary(Some(summary)),
                )));
            }
            // Not shown in an editor: state transitions, questions other than permissions
            // (they fail closed in the kernel), compaction to an editor that did not ask for
            // it, watch markers, future types.
            _ => {}
        }
        out
    }

    fn delta(&mut self, stream: Stream, index: u32, delta: &str, out: &mut Vec<Out>) {
        if delta.is_empty() {
            return;
        }
        let key = (stream, index);
        self.streamed.entry(key).or_default().push_str(delta);
        // Skip what a retried stream repeats of the text already shown.
        let mut fresh = delta;
        if let Some(shown) = self.shown.get_mut(&key) {
            let common = common_prefix(shown, fresh);
            shown.drain(..common);
            fresh = &fresh[common..];
            if fresh.is_empty() {
                return;
            }
            // Past (or off) what was shown: from here on everything is new.
            shown.clear();
        }
        out.push(Out::Update(match stream {
            Stream::Text => SessionUpdate::AgentMessageChunk(chunk(fresh)),
            Stream::Thinking => SessionUpdate::AgentThoughtChunk(chunk(fresh)),
        }));
    }

    /// A completed assistant message: sends what the deltas did not (all of it when none
    /// came, the tail when some were lost) and announces its tool calls.
    fn completed(&mut self, content: &[KBlock], out: &mut Vec<Out>) {
        for (i, block) in content.iter().enumerate() {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            match block {
                KBlock::Text { text: full } => self.fill(Stream::Text, index, full, out),
                KBlock::Thinking { thinking, redacted: false, .. } => self.fill(Stream::Thinking, index, thinking, out),
                KBlock::ToolCall { id, name, arguments } => {
                    if self.tools.contains_key(id) {
                        let fields = self.tool_fields(name, arguments).raw_input(arguments.clone());
                        self.remember(id, name, arguments);
                        out.push(Out::Update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.clone(), fields))));
                    } else {
                        out.push(self.announce(id, name, arguments, ToolCallStatus::Pending));
                    }
                }
                _ => {}
            }
        }
        self.streamed.clear();
        self.shown.clear();
        self.synced = true;
    }

    fn fill(&mut self, stream: Stream, index: u32, full: &str, out: &mut Vec<Out>) {
        let streamed = self.streamed.remove(&(stream, index)).unwrap_or_default();
        let shown = self.shown.remove(&(stream, index)).unwrap_or_default();
        let seen = if streamed.is_empty() && !shown.is_empty() { shown } else { streamed };
        // When the deltas disagree with the message, what was shown cannot be taken back.
        let rest = full.strip_prefix(seen.as_str()).unwrap_or_default();
        if !rest.is_empty() {
            out.push(Out::Update(match stream {
                Stream::Text => SessionUpdate::AgentMessageChunk(chunk(rest)),
                Stream::Thinking => SessionUpdate::AgentThoughtChunk(chunk(rest)),
            }));
        }
    }

    fn tool_fields(&self, name: &str, args: &Value) -> ToolCallUpdateFields {
        let def = self.opts.tools.get(name);
        ToolCallUpdateFields::new()
            .title(tools::title(name, def, args))
            .kind(tools::kind(def))
            .locations(tools::locations(self.opts.workspace.as_deref(), def, args))
    }

    fn remember(&mut self, id: &str, name: &str, args: &Value) {
        let state = self.tools.entry(id.to_string()).or_default();
        state.name = name.to_string();
        if !args.is_null() {
            state.args = args.clone();
        }
    }

    /// An update of a call whose arguments are streaming: title, locations, the arguments so
    /// far and, for a file change, its diff so far.
    fn streaming_args(&mut self, index: u32, args: &Value) -> Option<Out> {
        let id = self.streaming_calls.get(&index)?.clone();
        let name = self.tools.get(&id)?.name.clone();
        self.remember(&id, &name, args);
        let diffs = tools::diffs(self.opts.workspace.as_deref(), self.opts.tools.get(&name), args);
        let mut fields = self.tool_fields(&name, args).raw_input(args.clone());
        if !diffs.is_empty() {
            fields = fields.content(diffs);
        }
        Some(Out::Update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id, fields))))
    }

    fn announce(&mut self, id: &str, name: &str, args: &Value, status: ToolCallStatus) -> Out {
        self.remember(id, name, args);
        let def = self.opts.tools.get(name);
        let mut call = ToolCall::new(id.to_string(), tools::title(name, def, args))
            .kind(tools::kind(def))
            .status(status)
            .locations(tools::locations(self.opts.workspace.as_deref(), def, args));
        if !args.is_null() {
            call = call.raw_input(args.clone());
        }
        Out::Update(SessionUpdate::ToolCall(call))
    }

    fn end_turn(&mut self, turn_id: Option<i64>, stop_reason: StopReason, out: &mut Vec<Out>) {
        // A call left open (the turn was cancelled or failed mid-call) is shown as failed, so
        // no spinner is left behind.
        let mut open: Vec<String> = self.tools.drain().map(|(id, _)| id).collect();
        open.sort();
        for id in open {
            let fields = ToolCallUpdateFields::new().status(ToolCallStatus::Failed);
            out.push(Out::Update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id, fields))));
        }
        self.streamed.clear();
        self.shown.clear();
        self.synced = true;
        self.started_turn = None;
        out.push(Out::TurnEnded { turn_id, stop_reason });
    }
}

/// A plan as ACP shows it: the whole plan, the first entry not done in progress.
pub fn plan(entries: &[superpi_proto::PlanEntry]) -> SessionUpdate {
    let first_open = entries.iter().position(|e| !e.completed);
    let entries = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let status = if e.completed {
                PlanEntryStatus::Completed
            } else if Some(i) == first_open {
                PlanEntryStatus::InProgress
            } else {
                PlanEntryStatus::Pending
            };
            PlanEntry::new(e.text.as_str(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

fn common_prefix(a: &str, b: &str) -> usize {
    let mut n = 0;
    for (x, y) in a.chars().zip(b.chars()) {
        if x != y {
            break;
        }
        n += x.len_utf8();
    }
    n
}

/// Keeps the last `max` bytes of `s` (on a character boundary).
fn keep_tail(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = s.len() - max;
        while !s.is_char_boundary(cut) {
            cut += 1;
        }
        s.drain(..cut);
    }
}

/// The `_meta` of a tool call whose arguments a `before_tool` hook rewrote: the keys, under
/// `superpi.overwritten_keys` (an editor shows `rawInput` as it runs).
fn rewritten(keys: &[String]) -> Option<agent_client_protocol::v1::schema::Meta> {
    if keys.is_empty() {
        return None;
    }
    let mut meta = agent_client_protocol::v1::schema::Meta::new();
    meta.insert("superpi".into(), serde_json::json!({"overwritten_keys": keys}));
    Some(meta)
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

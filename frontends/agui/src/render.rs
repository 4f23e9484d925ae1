//! The renderer: kernel events in, AG-UI events out. A synchronous state machine with no
//! clock of its own: every call takes `now_ms`, and content deltas that arrive within the
//! merge window of the last content event are held and sent as one event, either when the
//! transport calls [`Renderer::poll`] at [`Renderer::deadline`] or when any other output
//! has to go first.
//!
//! A run is a turn. Inside a run the renderer keeps the order the official client's verifier
//! demands: a text, reasoning or tool-call stream is closed before the next block opens and
//! before the run ends. The agent state (status, mode, model, usage, plan, pending question)
//! goes out as one `STATE_SNAPSHOT` when the first run opens and as JSON Patch
//! `STATE_DELTA`s computed against the last state sent.
//!
//! Over 500 lines on purpose: the state machine is one `match` over the kernel's event types
//! beside the state it keeps, so each event's whole mapping reads in one place; the stream
//! bookkeeping is already apart in `render/streams.rs`.

use serde_json::{Value, json};
use superpi_proto::method::ConversationInfo;
use superpi_proto::question::{self, QuestionRequest};
use superpi_proto::{ContentBlock, Event, EventBody, PlanEntry, Role};

use crate::history;
use crate::wire::{AguiEvent, Outcome, json_text};

/// The `kind` of a kernel `ui_request` for a call of a client's tool.
pub const CLIENT_TOOL: &str = "client_tool";

/// Content deltas within this many milliseconds of the last content event merge.
pub const MERGE_WINDOW_MS: u64 = 16;

/// How a renderer behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    pub merge_window_ms: u64,
    /// Render stored user messages as `TEXT_MESSAGE_*` with role `user` (an attached
    /// watcher does; the run route does not, since its client sent the message).
    pub echo_user: bool,
    /// End the run at a permission question, as an interrupt the next run resumes (a client
    /// of AG-UI 1.0); otherwise the question is a `CUSTOM` event within the open run.
    pub interrupts: bool,
    /// End the run when the turn calls one of the client's tools, naming the call pending
    /// (a run stream; an attached watcher sees a `CUSTOM` `superpi.ui_request`).
    pub client_tools: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions { merge_window_ms: MERGE_WINDOW_MS, echo_user: false, interrupts: false, client_tools: false }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Run {
    run_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamKind {
    Text,
    Reasoning,
    Args,
}

/// Content held back by the merge window.
#[derive(Debug, Clone, PartialEq)]
struct Pending {
    kind: StreamKind,
    id: String,
    buf: String,
}

/// A text or reasoning message being streamed.
#[derive(Debug, Clone, PartialEq)]
struct OpenMessage {
    id: String,
    index: u32,
}

/// A tool call seen in this model call.
#[derive(Debug, Clone, PartialEq)]
struct ToolCall {
    index: u32,
    id: String,
    args_sent: bool,
    ended: bool,
}

/// The kernel events → AG-UI events state machine of one SSE stream.
#[derive(Debug, Clone)]
pub struct Renderer {
    thread_id: String,
    opts: RenderOptions,
    run: Option<Run>,
    snapshot_sent: bool,
    state: Value,
    sent_state: Value,
    text: Option<OpenMessage>,
    reasoning: Option<OpenMessage>,
    /// The assistant message of the current model call (parent of its tool calls).
    assistant_id: Option<String>,
    tools: Vec<ToolCall>,
    /// All text and thinking streamed in the current model call, to send what the deltas
    /// missed when the completed message arrives.
    call_text: String,
    call_thinking: String,
    pending: Option<Pending>,
    last_content_ms: Option<u64>,
    next_id: u64,
    /// The turn being rendered and how many message ids it has used.
    turn: Option<(i64, u64)>,
    wants_history: bool,
    /// Subagents started in this run and not ended (their child conversations).
    subagents: Vec<i64>,
    /// Tool calls whose output is shown as an activity.
    activities: Vec<String>,
}

impl Renderer {
    /// A renderer for one stream of a thread, with the conversation as the kernel described it.
    pub fn new(thread_id: &str, info: &ConversationInfo, opts: RenderOptions) -> Self {
        let state = json!({
            "threadId": thread_id,
            "conversationId": info.conversation_id,
            "harness": info.harness,
            "model": info.model,
            "mode": info.mode,
            "maxMode": info.max_mode,
            "status": info.status,
            "usage": {"inputTokens": 0, "outputTokens": 0, "totalInputTokens": 0, "totalOutputTokens": 0,
                      "cachedInputTokens": 0, "totalCachedInputTokens": 0},
            "plan": [],
            "pendingPermission": null,
        });
        Renderer {
            thread_id: thread_id.to_string(),
            opts,
            run: None,
            snapshot_sent: false,
            sent_state: Value::Null,
            state,
            text: None,
            reasoning: None,
            assistant_id: None,
            tools: Vec::new(),
            call_text: String::new(),
            call_thinking: String::new(),
            pending: None,
            last_content_ms: None,
            next_id: 0,
            turn: None,
            wants_history: false,
            subagents: Vec::new(),
            activities: Vec::new(),
        }
    }

    /// The agent state as it stands.
    pub fn state(&self) -> &Value {
        &self.state
    }

    pub fn run_open(&self) -> bool {
        self.run.is_some()
    }

    /// A run that continues turn `turn_id` from its question at `seq` (a resume, a client
    /// tool's result): its message ids count on from `seq`, so they differ from those the
    /// run before used for the same turn.
    pub fn continue_turn(&mut self, turn_id: i64, seq: u64) {
        self.turn = Some((turn_id, seq));
    }

    /// Opens a run with the client's run id: `RUN_STARTED`, then the state snapshot (first
    /// run of this stream) or a delta.
    pub fn start_run(&mut self, run_id: &str) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        self.open_run(run_id, &mut out);
        out
    }

    /// The start of an attached stream: a run that carries the state (with `last_plan`, the
    /// plan as it stands), then (written by the transport, page by page) the
    /// `MESSAGES_SNAPSHOT` of the visible history, then [`Renderer::attach_end`]. This is what
    /// goes before the snapshot.
    pub fn attach_start(&mut self, run_id: &str, last_plan: Option<&Event>) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        if let Some(EventBody::PlanUpdated { entries }) = last_plan.map(|e| &e.body) {
            self.set("plan", plan_state(entries));
        }
        self.open_run(run_id, &mut out);
        out
    }

    /// What follows an attached stream's `MESSAGES_SNAPSHOT`: the run stays open when the
    /// conversation is running (the turn in progress ends it) and finishes at once otherwise.
    pub fn attach_end(&mut self, running: bool) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        if running {
            self.set("status", json!("running"));
            self.push_state_delta(&mut out);
        } else {
            self.finish_run(&mut out, None, Outcome::success());
        }
        out
    }

    /// True once after a compaction, a clear or a message whose start was not streamed here: the
    /// transport should send a `MESSAGES_SNAPSHOT` of the history up to that event
    /// ([`Renderer::before_snapshot`] first).
    pub fn take_history_request(&mut self) -> bool {
        std::mem::take(&mut self.wants_history)
    }

    /// What goes before a `MESSAGES_SNAPSHOT` sent in the middle of a stream: held content,
    /// open streams closed, a run open.
    pub fn before_snapshot(&mut self, now_ms: u64) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        self.flush_pending(&mut out, now_ms);
        self.close_streams(&mut out);
        self.ensure_run(None, &mut out);
        out
    }

    /// When held content is due: call [`Renderer::poll`] then.
    pub fn deadline(&self) -> Option<u64> {
        self.pending.as_ref().map(|_| self.last_content_ms.unwrap_or(0) + self.opts.merge_window_ms)
    }

    /// Sends held content whose merge window has passed.
    pub fn poll(&mut self, now_ms: u64) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        if self.deadline().is_some_and(|due| now_ms >= due) {
            self.flush_pending(&mut out, now_ms);
        }
        out
    }

    /// Sends whatever is held, now (the stream is about to end).
    pub fn flush(&mut self, now_ms: u64) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        self.flush_pending(&mut out, now_ms);
        out
    }

    /// Ends an open run with `RUN_ERROR` (the kernel went away mid-run).
    pub fn fail(&mut self, message: &str, code: &str, now_ms: u64) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        self.flush_pending(&mut out, now_ms);
        if self.run.is_some() {
            self.close_streams(&mut out);
            self.close_subagents(&mut out);
            self.run = None;
            out.push(AguiEvent::RunError { message: message.to_string(), code: Some(code.to_string()) });
        }
        out
    }

    /// Renders one kernel event.
    pub fn render(&mut self, event: &Event, now_ms: u64) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        if let Some(turn) = event.turn_id
            && self.turn.is_none_or(|(t, _)| t != turn)
        {
            self.turn = Some((turn, 0));
        }
        match &event.body {
            EventBody::TextDelta { index, delta } => {
                self.ensure_run(event.turn_id, &mut out);
                self.open_text(*index, &mut out, now_ms);
                self.call_text.push_str(delta);
                if let Some(id) = self.text.as_ref().map(|t| t.id.clone()) {
                    self.content(StreamKind::Text, &id, delta, &mut out, now_ms);
                }
            }
            EventBody::ThinkingDelta { index, delta } => {
                self.ensure_run(event.turn_id, &mut out);
                self.open_reasoning(*index, &mut out, now_ms);
                self.call_thinking.push_str(delta);
                if let Some(id) = self.reasoning.as_ref().map(|r| r.id.clone()) {
                    self.content(StreamKind::Reasoning, &id, delta, &mut out, now_ms);
                }
            }
            EventBody::ToolcallDelta { index, delta, id, name, .. } => {
                self.ensure_run(event.turn_id, &mut out);
                self.tool_delta(*index, delta.as_deref(), id.as_deref(), name.as_deref(), &mut out, now_ms);
            }
            EventBody::MessageCompleted { role, content, .. } => {
                self.flush_pending(&mut out, now_ms);
                match role {
                    Role::Assistant => {
                        self.ensure_run(event.turn_id, &mut out);
                        self.complete_assistant(content, &mut out);
                    }
                    Role::User if self.opts.echo_user => {
                        self.ensure_run(event.turn_id, &mut out);
                        self.close_streams(&mut out);
                        let text = blocks_text(content);
                        let id = format!("u{}", event.seq);
                        out.push(AguiEvent::TextMessageStart { message_id: id.clone(), role: "user".into() });
                        if !text.is_empty() {
                            out.push(AguiEvent::TextMessageContent { message_id: id.clone(), delta: text });
                        }
                        out.push(AguiEvent::TextMessageEnd { message_id: id });
                    }
                    _ => {}
                }
            }
            EventBody::StreamReset { retry_in_ms } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                self.close_streams(&mut out);
                self.reset_call();
                out.push(custom("superpi.stream_reset", json!({"retryInMs": retry_in_ms})));
            }
            EventBody::ToolStarted { tool_call_id, name, arguments, overwritten_keys } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                self.close_text_and_reasoning(&mut out);
                self.whole_tool_call(tool_call_id, name, arguments, &mut out);
                // A hook rewrote these arguments: the call runs with what it made of them.
                if !overwritten_keys.is_empty() {
                    let value = json!({"toolCallId": tool_call_id, "toolName": name,
                        "overwrittenKeys": overwritten_keys, "arguments": arguments});
                    out.push(custom("superpi.tool_rewritten", value));
                }
            }
            EventBody::ToolOutput { tool_call_id, name, chunk } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                self.close_text_and_reasoning(&mut out);
                self.tool_output(tool_call_id, name, chunk, &mut out);
            }
            EventBody::ToolBlocked { tool_call_id, name, reason } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                self.end_tool(tool_call_id, &mut out);
                out.push(custom(
                    "superpi.tool_blocked",
                    json!({"toolCallId": tool_call_id, "toolName": name, "reason": reason}),
                ));
            }
            EventBody::ToolCompleted { tool_call_id, output, is_error, .. } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                self.end_tool(tool_call_id, &mut out);
                self.tool_output_ended(tool_call_id, *is_error, &mut out);
                let mut content = json_text(output);
                if *is_error && content.is_empty() {
                    content = "error".to_string();
                }
                out.push(AguiEvent::ToolCallResult {
                    message_id: history::tool_message_id(tool_call_id),
                    tool_call_id: tool_call_id.clone(),
                    content,
                    role: "tool".into(),
                });
            }
            EventBody::PermissionRequest { request_id, tool_call_id, tool_name, arguments, reason, risk, options } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                let options: Vec<Value> =
                    options.iter().map(|o| json!({"optionId": o.option_id, "name": o.name, "kind": o.kind})).collect();
                let mut value = json!({
                    "requestId": request_id,
                    "toolCallId": tool_call_id,
                    "toolName": tool_name,
                    "arguments": arguments,
                    "reason": reason,
                    "options": options,
                });
                if let (Some(risk), Some(map)) = (risk, value.as_object_mut()) {
                    map.insert("risk".into(), json!(risk));
                }
                self.set("pendingPermission", value.clone());
                self.push_state_delta(&mut out);
                if self.opts.interrupts && self.run.is_some() {
                    let interrupt = self.interrupt(&value, event.seq);
                    self.pause_run(Outcome::Interrupt { interrupts: vec![interrupt] }, &mut out);
                } else {
                    out.push(custom("superpi.permission_request", value));
                }
            }
            EventBody::UiRequest { request, .. }
                if self.opts.client_tools
                    && self.run.is_some()
                    && request.get("kind").and_then(Value::as_str) == Some(CLIENT_TOOL) =>
            {
                self.flush_pending(&mut out, now_ms);
                let call = request.get("tool_call_id").and_then(Value::as_str).unwrap_or_default().to_string();
                self.end_tool(&call, &mut out);
                self.pause_run(Outcome::Success { pending_tool_call_ids: vec![call] }, &mut out);
            }
            EventBody::UiRequest { request_id, request }
                if self.opts.interrupts
                    && self.run.is_some()
                    && request.get("kind").and_then(Value::as_str) == Some(question::KIND) =>
            {
                self.flush_pending(&mut out, now_ms);
                match serde_json::from_value::<QuestionRequest>(Value::Object(request.clone())) {
                    Ok(q) => {
                        let interrupt = self.question_interrupt(request_id, &q, event.seq);
                        self.pause_run(Outcome::Interrupt { interrupts: vec![interrupt] }, &mut out);
                    }
                    Err(err) => tracing::warn!(request_id, "a question the kernel sent does not read: {err}"),
                }
            }
            EventBody::UiRequest { request_id, request } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                let mut value = Value::Object(request.clone());
                if let Some(map) = value.as_object_mut() {
                    map.insert("requestId".into(), json!(request_id));
                }
                out.push(custom("superpi.ui_request", value));
            }
            EventBody::UiResolved { request_id, outcome } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                if self.state["pendingPermission"]["requestId"] == json!(request_id) {
                    self.set("pendingPermission", Value::Null);
                }
                out.push(custom("superpi.ui_resolved", json!({"requestId": request_id, "outcome": outcome})));
            }
            EventBody::StateChanged { status } => self.set("status", json!(status)),
            EventBody::ModeChanged { mode, max_mode } => {
                self.set("mode", json!(mode));
                if let Some(max) = max_mode {
                    self.set("maxMode", json!(max));
                }
            }
            EventBody::UsageUpdated {
                input_tokens,
                output_tokens,
                total_input_tokens,
                total_output_tokens,
                cached_input_tokens,
                total_cached_input_tokens,
                context_tokens,
                context_window,
                cost_usd,
                turn_cost_usd,
                total_cost_usd,
            } => {
                let mut usage = json!({
                    "inputTokens": input_tokens,
                    "outputTokens": output_tokens,
                    "totalInputTokens": total_input_tokens,
                    "totalOutputTokens": total_output_tokens,
                    "cachedInputTokens": cached_input_tokens,
                    "totalCachedInputTokens": total_cached_input_tokens,
                });
                if let (Some(tokens), Some(window)) = (context_tokens, context_window) {
                    usage["contextTokens"] = json!(tokens);
                    usage["contextWindow"] = json!(window);
                }
                // US dollars: the last call, the turn and the conversation, when priced.
                for (key, usd) in
                    [("costUsd", cost_usd), ("turnCostUsd", turn_cost_usd), ("totalCostUsd", total_cost_usd)]
                {
                    if let Some(usd) = usd {
                        usage[key] = json!(usd);
                    }
                }
                self.set("usage", usage);
            }
            EventBody::PlanUpdated { entries } => self.set("plan", plan_state(entries)),
            // What the model reads changed: the transport sends a snapshot of it.
            EventBody::CompactionCompleted { .. } | EventBody::ContextCleared {} => self.wants_history = true,
            EventBody::Notice { level, message } => {
                self.flush_pending(&mut out, now_ms);
                if self.run.is_some() {
                    out.push(custom("superpi.notice", json!({"level": level, "message": message})));
                }
            }
            EventBody::Handoff { from, to, summary } => {
                self.flush_pending(&mut out, now_ms);
                if self.run.is_some() {
                    out.push(custom("superpi.handoff", json!({"from": from, "to": to, "summary": summary})));
                }
            }
            EventBody::ArtifactCreated { name, bytes, media_type, tool_call_id } => {
                // A download link: this server's artifact route, authenticated like the run.
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                let url = superpi_http::artifact_path(event.conversation_id, name);
                let value = json!({"name": name, "bytes": bytes, "mediaType": media_type, "url": url,
                    "toolCallId": tool_call_id, "conversationId": event.conversation_id});
                out.push(custom("superpi.artifact", value));
            }
            EventBody::SubagentStarted { child_conversation_id, role, task } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                self.subagent_started(*child_conversation_id, role, task, &mut out);
            }
            EventBody::SubagentFinished { child_conversation_id, status, summary } => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                self.subagent_finished(*child_conversation_id, status, summary.as_deref().unwrap_or(""), &mut out);
            }
            EventBody::TurnStarted {} => {
                self.flush_pending(&mut out, now_ms);
                self.ensure_run(event.turn_id, &mut out);
                self.close_streams(&mut out);
                self.reset_call();
                self.tools.clear();
                self.set("status", json!("running"));
            }
            EventBody::TurnCompleted { result, .. } => {
                self.flush_pending(&mut out, now_ms);
                self.end_turn(&mut out);
                self.finish_run(&mut out, result.clone().map(Value::String), Outcome::success());
            }
            EventBody::TurnCancelled {} => {
                self.flush_pending(&mut out, now_ms);
                self.end_turn(&mut out);
                self.finish_run(&mut out, None, Outcome::Cancelled);
            }
            EventBody::TurnError { error } => {
                self.flush_pending(&mut out, now_ms);
                self.end_turn(&mut out);
                self.push_state_delta(&mut out);
                if self.run.take().is_some() {
                    self.close_subagents(&mut out);
                    out.push(AguiEvent::RunError { message: error.clone(), code: Some("turn_error".into()) });
                }
            }
            _ => {}
        }
        self.push_state_delta(&mut out);
        out
    }

    // ---- runs and state ----

    fn open_run(&mut self, run_id: &str, out: &mut Vec<AguiEvent>) {
        self.run = Some(Run { run_id: run_id.to_string() });
        out.push(AguiEvent::RunStarted { thread_id: self.thread_id.clone(), run_id: run_id.to_string() });
        if self.snapshot_sent {
            self.push_state_delta(out);
        } else {
            self.snapshot_sent = true;
            self.sent_state = self.state.clone();
            out.push(AguiEvent::StateSnapshot { snapshot: self.state.clone() });
        }
    }

    /// Opens a run for output that arrives while none is open (an attached stream seeing a
    /// new turn); its id names the turn.
    fn ensure_run(&mut self, turn_id: Option<i64>, out: &mut Vec<AguiEvent>) {
        if self.run.is_none() {
            self.next_id += 1;
            let run_id = match turn_id {
                Some(turn) => format!("turn-{turn}"),
                None => format!("superpi-{}", self.next_id),
            };
            self.open_run(&run_id, out);
        }
    }

    fn finish_run(&mut self, out: &mut Vec<AguiEvent>, result: Option<Value>, outcome: Outcome) {
        self.push_state_delta(out);
        self.close_subagents(out);
        if let Some(run) = self.run.take() {
            out.push(AguiEvent::RunFinished { thread_id: self.thread_id.clone(), run_id: run.run_id, result, outcome });
        }
    }

    fn end_turn(&mut self, out: &mut Vec<AguiEvent>) {
        self.close_streams(out);
        self.reset_call();
        self.tools.clear();
        self.activities.clear();
        self.set("status", json!("idle"));
        self.set("pendingPermission", Value::Null);
    }

    fn set(&mut self, key: &str, value: Value) {
        if let Some(map) = self.state.as_object_mut() {
            map.insert(key.to_string(), value);
        }
    }

    /// A `STATE_DELTA` when the state changed since it was last sent and a run is open.
    fn push_state_delta(&mut self, out: &mut Vec<AguiEvent>) {
        if self.run.is_none() || !self.snapshot_sent || self.state == self.sent_state {
            return;
        }
        let patch = json_patch::diff(&self.sent_state, &self.state);
        self.sent_state = self.state.clone();
        if !patch.0.is_empty() {
            out.push(AguiEvent::StateDelta { delta: patch });
        }
    }
}

/// The plan as the state holds it.
fn plan_state(entries: &[PlanEntry]) -> Value {
    entries.iter().map(|e| json!({"id": e.id, "text": e.text, "completed": e.completed})).collect()
}

fn custom(name: &str, value: Value) -> AguiEvent {
    AguiEvent::Custom { name: name.to_string(), value }
}

fn blocks_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

mod progress;
mod streams;

pub use progress::TOOL_OUTPUT;

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "render_props_tests.rs"]
mod props;

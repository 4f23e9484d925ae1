//! The turn loop: context from the stored entries, a provider stream, events, tool calls
//! through the tool-call pipeline (`pipeline.rs`), and the next model request, until the
//! model stops.
//!
//! Over 500 lines: `drive` is the loop of one turn, read top to bottom; what it decides at each
//! step (compaction, structured output, client tools, hooks) lives in the modules below.

pub(crate) mod backend;
pub(crate) mod backend_seed;
pub(crate) mod checkpoint;
pub(crate) mod client_tools;
pub(crate) mod cluster_holder;
pub(crate) mod compaction;
pub(crate) mod context;
pub(crate) mod cost;
pub(crate) mod elicitation;
pub(crate) mod handoff;
pub(crate) mod hooks;
pub(crate) mod loadout;
pub(crate) mod mcp_login;
pub(crate) mod nested_rules;
pub(crate) mod permission;
pub(crate) mod pipeline;
pub(crate) mod put_question;
pub(crate) mod recovery;
pub(crate) mod structured;
pub(crate) mod summary;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt;
use serde_json::Value;
use superpi_policy::{Harness, Mode};
use superpi_proto::{ContentBlock, EntryKind, Event, Message, Role, Usage};
use superpi_providers::{ProviderError, StopReason, StreamEvent, Terminal};
use tokio_util::sync::CancellationToken;

use crate::catalog::{ESCALATE_TOOL, HANDOFF_TOOL};
use crate::conversation::{Conversation, Input, Steer};
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::telemetry::traces::SpanContext;
use crate::turn::compaction::{Frame, Prepared, next_request, tool_specs};
use crate::turn::recovery::TurnEnd;
use loadout::Loadout;
use pipeline::{CallEnd, Caller, PlannedCall};
use structured::{RESPOND_TOOL, Structured, Verdict};
use superpi_mcp_client::Attached;
use superpi_store::TurnStatus;

/// A turn stops after this many model calls, whatever the model wants.
const MAX_MODEL_CALLS: usize = 64;
/// A vendor's paused answer (Anthropic's `pause_turn`) is sent back this many times in a row
/// at most; the turn then ends on what it has.
const MAX_PAUSES: usize = 8;

enum Streamed {
    Done(Terminal),
    Failed(Terminal),
    Cancelled,
}

pub(crate) async fn run(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    ceiling: Mode,
    message: Message,
    cancel: CancellationToken,
) {
    let cid = conv.id;
    // The prompt enters the history with the turn's `running` status, in one transaction.
    let prompt = Event::message_completed(cid, Some(turn_id), Role::User, message.content.clone(), None);
    let running = TurnStatus { turn_id, status: "running", error: None };
    if let Err(err) = conv.publish_turn(kernel, prompt, Some((EntryKind::User, &message)), running) {
        tracing::error!("storing the prompt of turn {turn_id}: {err}");
        let why = format!("could not store the prompt: {err}");
        let failed = TurnStatus { turn_id, status: "error", error: Some(&why) };
        let _ = conv.publish_turn(kernel, Event::turn_error(cid, turn_id, why.clone()), None, failed);
        return;
    }
    let title: String = message.text().chars().take(80).collect();
    if !title.trim().is_empty() {
        let _ = kernel.store.set_title(cid, title.trim());
    }
    // Watchers on other kernels said so in the store before their submits: its deltas reach them.
    crate::turn::cluster_holder::refresh_watched(kernel, conv);
    conv.emit(kernel, Event::turn_started(cid, turn_id));
    conv.set_status(kernel, Some(turn_id), crate::conversation::status::RUNNING);
    cost::begin(kernel, conv);

    let settings = conv.settings();
    let mark = kernel.telemetry.turn_started(cid, turn_id, &settings.harness, &settings.model);
    let trace = mark.context();
    // Checked at submit: a schema that no longer compiles (a newer kernel's rules) fails here.
    let schema = lock(&conv.output_schemas).remove(&turn_id);
    let structured = schema.map(Structured::new).transpose();
    let ended = match crate::turn::backend::backend_of(kernel, conv) {
        Some(_) if !matches!(structured, Ok(None)) => {
            Err("output_schema: this harness runs an agent program, which answers in its own words".to_string())
        }
        Some(kind) => {
            // A backend writes through its own tools: the checkpoint is taken before it starts.
            crate::turn::checkpoint::before_write(kernel, conv, turn_id).await;
            crate::turn::backend::drive(kernel, conv, turn_id, kind, ceiling, &message, &cancel).await
        }
        None => match structured {
            Ok(structured) => drive(kernel, conv, (turn_id, ceiling, trace), structured, &cancel).await,
            Err(why) => Err(why),
        },
    };
    match &ended {
        Ok(TurnEnd::Completed { .. }) => kernel.telemetry.turn_ended(mark, "completed", None),
        Ok(TurnEnd::Cancelled) => kernel.telemetry.turn_ended(mark, "cancelled", None),
        Err(why) => kernel.telemetry.turn_ended(mark, "error", Some(why)),
    }
    // Steering prompts that came too late to join (the turn failed, was cancelled, or ran
    // a backend) queue as turns of their own, as they would have without `steer`.
    let late = lock(&conv.steering).close();
    for Steer { turn_id, message, ceiling } in late {
        let _ = conv.input.send(Input::Submit { turn_id, message, ceiling }).await;
    }
    lock(&conv.client_tools).remove(&turn_id);
    crate::turn::checkpoint::turn_ended(kernel, conv, turn_id, &message.text()).await;
    crate::turn::hooks::after_turn(kernel, conv, turn_id, &ended);
    crate::turn::recovery::record_end(kernel, conv, turn_id, ended);
}

/// Reads the settings again for this turn: the conversation's policy (network, permissions,
/// protected paths) is rebuilt from the files as they are, keeping its mode and "always"
/// answers, so a tightened rule applies to every tool from this turn on. A settings file that
/// does not read fails the turn, naming it; settings only a new kernel applies get a notice.
fn refresh_policy(kernel: &Arc<Kernel>, conv: &Arc<Conversation>, turn_id: i64) -> Result<(), String> {
    let settings = conv.settings();
    let workspace = settings.workspace.as_deref().map(std::path::Path::new);
    let mut held = lock(&conv.policy);
    let (mode, overrides, tool_limit) = match held.as_ref() {
        Ok(policy) => (policy.mode(), policy.overrides().clone(), policy.tool_limit().map(<[String]>::to_vec)),
        Err(_) => {
            let stored = kernel.store.permission_overrides(conv.id).ok().flatten();
            let overrides = stored.and_then(|json| serde_json::from_str(&json).ok()).unwrap_or_default();
            // A subagent's bound is stored with it: a policy rebuilt from the files keeps it.
            let row = kernel.store.conversation(conv.id).ok().flatten();
            let tool_limit = row.and_then(|row| row.settings.tool_limit);
            (settings.mode.parse::<Mode>().unwrap_or(Mode::Plan), overrides, tool_limit)
        }
    };
    let fresh = kernel
        .catalog
        .policy_now(&settings.harness, mode, workspace, overrides)
        .map(|policy| policy.with_tool_limit(tool_limit).with_extra_roots(extra_roots(&settings.extra_dirs)));
    let read = fresh.as_ref().map(|_| ()).map_err(|why| format!("the settings do not read: {why}"));
    *held = fresh;
    drop(held);
    if let Some(notice) = kernel.catalog.needs_restart() {
        conv.emit(kernel, Event::notice(conv.id, Some(turn_id), "warning", notice));
    }
    read
}

/// The directories a conversation's tools may write besides its workspace.
pub(crate) fn extra_roots(dirs: &[String]) -> Vec<std::path::PathBuf> {
    dirs.iter().map(std::path::PathBuf::from).collect()
}

async fn drive(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    (turn_id, ceiling, trace): (i64, Mode, SpanContext),
    mut structured: Option<Structured>,
    cancel: &CancellationToken,
) -> Result<TurnEnd, String> {
    let mut ceiling = ceiling;
    let catalog = &kernel.catalog;
    refresh_policy(kernel, conv, turn_id)?;
    // The harness, model and tools of the next steps: made again after a hand-off, its model
    // moved on in a cascade.
    let mut loadout = Loadout::new(kernel, conv, turn_id, cancel).await?;
    // The step was refused as longer than the window and is being sent again after compaction.
    let mut resent = false;
    // Answers in a row the vendor paused: the next request only lets the model go on.
    let mut paused = 0;

    for request_number in 1..=MAX_MODEL_CALLS {
        // A spent budget ends the turn before another call, never during one.
        if let Some(why) = cost::over_budget(kernel, conv, turn_id) {
            return Ok(TurnEnd::Completed { result: why, stop_reason: "budget" });
        }
        // The deferred tools a `tool_search` of the last step found join this request.
        let found: BTreeSet<String> = lock(&conv.mcp_loaded).difference(&loadout.loaded).cloned().collect();
        if !found.is_empty() {
            let mut more = lock(&conv.mcp_attached).loaded_defs(&found);
            if let Ok(policy) = &*lock(&conv.policy) {
                more.retain(|t| policy.within_limit(&t.name));
            }
            loadout.specs.extend(tool_specs(&more));
            loadout.loaded.extend(found);
        }
        let specs = loadout.offered(conv, structured.as_ref());
        let model = loadout.model.clone();
        let effort = conv.settings().effort;
        // A window learned meanwhile (by this turn's compaction or another conversation's).
        let limits = catalog.limits(&model);
        let mut frame = Frame { model: &model, effort, system: loadout.system.as_deref(), tools: &specs, limits };
        // Prompts that steer this turn join its history now, at a step boundary: after the
        // results of every call of the last answer (a paused answer is no boundary).
        let steering = if paused == 0 { lock(&conv.steering).take() } else { Vec::new() };
        for steer in steering {
            ceiling = ceiling.min(steer.ceiling);
            *lock(&conv.turn_ceiling) = Some(ceiling);
            join_steer(kernel, conv, turn_id, steer);
        }
        // The context by its rules (compacted first when it grew past the threshold).
        let (mut request, request_tokens) = match next_request(kernel, conv, turn_id, &mut frame, cancel).await? {
            Prepared::Request(request, tokens) => (*request, tokens),
            Prepared::Cancelled => return Ok(TurnEnd::Cancelled),
        };
        let native = loadout.native;
        request.output_schema = structured.as_ref().filter(|_| native).map(Structured::for_provider);
        let context = ContextSize { request_tokens, window: frame.limits.context_window };
        crate::turn::hooks::before_request(kernel, conv, turn_id, &model, request_number, cancel).await;
        let span = kernel.telemetry.model_started(trace, &model);
        let stream = loadout.provider.stream(request);
        let streamed = tokio::select! {
            streamed = stream_model(kernel, conv, turn_id, stream) => streamed,
            _ = cancel.cancelled() => Streamed::Cancelled,
        };
        let model = model.as_str();
        match &streamed {
            Streamed::Cancelled => kernel.telemetry.model_ended(span, model, "cancelled", None, None),
            Streamed::Done(t) => kernel.telemetry.model_ended(span, model, "ok", Some(t.usage), None),
            Streamed::Failed(t) => {
                let why = t.error.as_ref().map(|e| e.to_string()).unwrap_or_else(|| "the stream failed".into());
                kernel.telemetry.model_ended(span, model, "error", Some(t.usage), Some(&why))
            }
        }
        let terminal = match streamed {
            Streamed::Cancelled => return Ok(TurnEnd::Cancelled),
            Streamed::Failed(terminal) => {
                // Refused as longer than the window: learn the window, compact, send the step
                // again, once.
                if let Some(ProviderError::ContextOverflow { window, requested, message, .. }) = &terminal.error {
                    if resent {
                        return Err(compaction::refused_again(model, frame.limits, message));
                    }
                    resent = true;
                    if !terminal.message.content.is_empty() {
                        conv.emit(kernel, Event::stream_reset(conv.id, Some(turn_id), 0));
                    }
                    let (window, requested) = (*window, *requested);
                    let sent = request_tokens;
                    match compaction::recover(kernel, conv, turn_id, &mut frame, sent, window, requested, cancel).await
                    {
                        Ok(true) => continue,
                        Ok(false) => return Ok(TurnEnd::Cancelled),
                        Err(why) => return Err(why),
                    }
                }
                let why = terminal.error.as_ref().map_or_else(|| "the model stream failed".into(), |e| e.to_string());
                // In a cascade the next model takes the step again; what streamed is void.
                if loadout.escalation().is_some() {
                    if !terminal.message.content.is_empty() {
                        conv.emit(kernel, Event::stream_reset(conv.id, Some(turn_id), 0));
                    }
                    if loadout.escalate(kernel, conv, turn_id, &format!("the step failed: {why}")) {
                        continue;
                    }
                }
                if !terminal.message.content.is_empty() {
                    store_assistant(kernel, conv, (turn_id, model), &terminal, context);
                }
                return Err(why);
            }
            Streamed::Done(terminal) => terminal,
        };
        resent = false;
        store_assistant(kernel, conv, (turn_id, model), &terminal, context);

        let calls: Vec<(String, String, Value)> = terminal
            .message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall { id, name, arguments } => Some((id.clone(), name.clone(), arguments.clone())),
                _ => None,
            })
            .collect();
        // Paused by the vendor: the history goes back as it is, this answer last.
        if calls.is_empty() && terminal.stop_reason == StopReason::Paused && paused < MAX_PAUSES {
            paused += 1;
            continue;
        }
        paused = 0;
        // The model is done, unless a steering prompt came meanwhile: it gets another request.
        if calls.is_empty() && !lock(&conv.steering).close_unless_waiting() {
            continue;
        }
        if calls.is_empty()
            && let Some(structured) = structured.as_mut()
        {
            let verdict = match native {
                true => structured.judge_text(&terminal.message.text()),
                false => structured.judge_missing_call(),
            };
            match verdict {
                Verdict::Accepted(result) => return Ok(TurnEnd::Completed { result, stop_reason: "end_turn" }),
                Verdict::Retry(told) => {
                    structured::tell(kernel, conv, turn_id, &told);
                    continue;
                }
                // In a cascade the next model is asked, told why, with a retry of its own.
                Verdict::Failed(why)
                    if loadout.escalate(kernel, conv, turn_id, "its answer did not match the schema") =>
                {
                    structured.second_chance();
                    structured::tell(kernel, conv, turn_id, &why);
                    continue;
                }
                Verdict::Failed(why) => return Err(why),
            }
        }
        if calls.is_empty() {
            let stop_reason = match terminal.stop_reason {
                StopReason::MaxTokens => "max_tokens",
                StopReason::Refusal => "refusal",
                _ => "end_turn",
            };
            return Ok(TurnEnd::Completed { result: terminal.message.text(), stop_reason });
        }
        // The answer a `respond` call gave, or why the turn fails for it.
        let mut answered = None;
        let (mut escalated, mut handed) = (false, false);
        for (call_id, name, arguments) in calls {
            if cancel.is_cancelled() {
                return Ok(TurnEnd::Cancelled);
            }
            let settings = conv.settings();
            let workspace = settings.workspace.as_ref().map(PathBuf::from);
            let call = PlannedCall { call_id, name, arguments, workspace };
            match structured.as_mut().filter(|_| !native && call.name == RESPOND_TOOL) {
                Some(structured) => answered = structured::respond(kernel, conv, turn_id, &call, structured),
                // After a hand-off the answer's other calls are the target's to decide: refused.
                None if handed => {
                    let why = "not run: the conversation was handed to another harness in the same answer";
                    complete_call(kernel, conv, turn_id, &call, superpi_proto::tool::ToolCallResult::error(why));
                }
                None if loadout.client.contains(&call.name) => {
                    client_tools::execute(kernel, conv, turn_id, call, cancel).await
                }
                None => {
                    let name = call.name.clone();
                    let ran = execute_tool(kernel, conv, (turn_id, trace), ceiling, call, cancel).await;
                    // A hand-over tool that ran (its hooks and the policy let it) moves the turn on.
                    escalated |= ran && name == ESCALATE_TOOL;
                    if ran && name == HANDOFF_TOOL {
                        handed = true;
                        ceiling = conv.settings().mode_ceiling.map_or(ceiling, |kept| ceiling.min(kept));
                        *lock(&conv.turn_ceiling) = Some(ceiling);
                    }
                }
            }
        }
        if cancel.is_cancelled() {
            return Ok(TurnEnd::Cancelled);
        }
        match answered {
            Some(Ok(result)) => return Ok(TurnEnd::Completed { result, stop_reason: "end_turn" }),
            // In a cascade the next model is asked (the call's result told why).
            Some(Err(_)) if loadout.escalate(kernel, conv, turn_id, "its answer did not match the schema") => {
                if let Some(structured) = structured.as_mut() {
                    structured.second_chance();
                }
            }
            Some(Err(why)) => return Err(why),
            None => {}
        }
        if handed {
            loadout = Loadout::new(kernel, conv, turn_id, cancel).await?;
        } else if escalated {
            loadout.escalate(kernel, conv, turn_id, "the model asked to");
        }
    }
    Err(format!("the turn stopped after {MAX_MODEL_CALLS} model calls"))
}

/// A steering prompt joins the running turn's history; its own turn row ends `steered` in the
/// same transaction, so it is in the history or still queued, never both or neither.
fn join_steer(kernel: &Kernel, conv: &Conversation, turn_id: i64, steer: Steer) {
    let event = Event::message_completed(conv.id, Some(turn_id), Role::User, steer.message.content.clone(), None);
    let steered = TurnStatus { turn_id: steer.turn_id, status: "steered", error: None };
    if let Err(err) = conv.publish_turn(kernel, event, Some((EntryKind::User, &*steer.message)), steered) {
        tracing::error!("storing a prompt that steers turn {turn_id}: {err}");
    }
}

/// A request's size and the model's window, for the context an answer leaves.
#[derive(Clone, Copy)]
struct ContextSize {
    request_tokens: u64,
    window: u64,
}

/// Stores an answer of `model` and reports its usage and cost.
fn store_assistant(
    kernel: &Kernel,
    conv: &Conversation,
    (turn_id, model): (i64, &str),
    terminal: &Terminal,
    context: ContextSize,
) {
    let mut message = terminal.message.clone();
    message.role = Role::Assistant;
    message.usage = Some(terminal.usage);
    message.stop_reason = Some(terminal.stop_reason.as_str().to_string());
    let event = Event::message_completed(
        conv.id,
        Some(turn_id),
        Role::Assistant,
        message.content.clone(),
        Some(terminal.usage),
    );
    if let Err(err) = conv.publish(kernel, event, Some((EntryKind::Assistant, &message))) {
        tracing::error!("storing an answer of turn {turn_id}: {err}");
    }
    let total = {
        let mut total = lock(&conv.usage_total);
        total.add(terminal.usage);
        *total
    };
    // What the next request starts from: the request as the provider counted it (else as
    // estimated) and this answer.
    let input = if terminal.usage.input_tokens > 0 { terminal.usage.input_tokens } else { context.request_tokens };
    let answer = terminal.usage.output_tokens.max(superpi_providers::tokens::message(&message));
    let cost = cost::charge(kernel, conv, model, terminal.usage, None);
    let event = Event::usage_updated(conv.id, Some(turn_id), terminal.usage, total)
        .with_context(input + answer, context.window)
        .with_cost(cost);
    conv.emit(kernel, event);
}

/// Publishes the stream's deltas as they come and returns its terminal.
async fn stream_model(
    kernel: &Kernel,
    conv: &Conversation,
    turn_id: i64,
    mut stream: superpi_providers::EventStream,
) -> Streamed {
    let cid = conv.id;
    let turn = Some(turn_id);
    // Each tool call's argument text so far, by block index, for `partial_args`.
    let mut arguments: HashMap<u32, PartialArgs> = HashMap::new();
    while let Some(event) = stream.next().await {
        // A provider stream that is always ready (the mock) must not starve the watchers'
        // tasks on a small machine.
        tokio::task::coop::consume_budget().await;
        match event {
            StreamEvent::TextDelta { index, delta } => conv.emit(kernel, Event::text_delta(cid, turn, index, delta)),
            StreamEvent::ThinkingDelta { index, delta } => {
                conv.emit(kernel, Event::thinking_delta(cid, turn, index, delta))
            }
            StreamEvent::ToolCallDelta { index, delta, id, name } => {
                let partial = arguments.entry(index).or_default().push(&delta);
                conv.emit(kernel, Event::toolcall_delta(cid, turn, index, Some(delta), partial, id, name))
            }
            StreamEvent::Reset { retry_in_ms } => {
                arguments.clear();
                conv.emit(kernel, Event::stream_reset(cid, turn, retry_in_ms))
            }
            StreamEvent::Done(terminal) => return Streamed::Done(terminal),
            StreamEvent::Error(terminal) => return Streamed::Failed(terminal),
            _ => {}
        }
    }
    Streamed::Failed(Terminal {
        stop_reason: StopReason::Error,
        message: Message { role: Role::Assistant, content: Vec::new(), usage: None, stop_reason: None },
        usage: Usage::default(),
        details: Default::default(),
        response_id: None,
        error: Some(superpi_providers::ProviderError::Protocol {
            provider: "stream".into(),
            message: "the stream ended without a terminal event".into(),
        }),
    })
}

/// One tool call's arguments as they stream. Its `partial_args` go with the first delta and
/// then once the text has grown by an eighth (at least 256 bytes) since they last went, so a
/// long write costs a few times its size on the wire rather than its size per delta.
#[derive(Default)]
struct PartialArgs {
    text: String,
    sent_at: Option<usize>,
}

impl PartialArgs {
    fn push(&mut self, delta: &str) -> Value {
        self.text.push_str(delta);
        let due = match self.sent_at {
            None => true,
            Some(at) => self.text.len() >= at + (at / 8).max(256),
        };
        match due.then(|| superpi_providers::partial_json::complete(&self.text)).flatten() {
            Some(value) => {
                self.sent_at = Some(self.text.len());
                value
            }
            None => Value::Null,
        }
    }
}

/// The MCP tools this turn offers: the user's servers and those a frontend attached, those
/// the harness offers. Without a workspace no server starts.
async fn attach_mcp(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    harness: &Harness,
    cancel: &CancellationToken,
) -> Attached {
    let Some(workspace) = conv.settings().workspace.map(PathBuf::from) else { return Attached::default() };
    let own = lock(&conv.mcp_servers).clone();
    let (mut attached, notices) = kernel.mcp.attach(&kernel.catalog.config_dir, own, &workspace, Some(conv.id)).await;
    // A server waiting for a login: through an editor that opens URLs, the login now.
    let notices =
        mcp_login::log_in_where_asked(kernel, conv, turn_id, &workspace, (&mut attached, notices), cancel).await;
    for notice in notices {
        conv.emit(kernel, Event::notice(conv.id, Some(turn_id), "warning", notice));
    }
    attached.retain(|def| harness.offers_live(def));
    attached
}

/// One tool call of the turn: announced, run through the pipeline, its result stored for
/// the model. Whether it ran without an error.
async fn execute_tool(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    (turn_id, trace): (i64, SpanContext),
    ceiling: Mode,
    call: PlannedCall,
    cancel: &CancellationToken,
) -> bool {
    let (cid, turn) = (conv.id, Some(turn_id));
    // `tool_started` is published by the pipeline, once the hooks have had their say.
    let end = pipeline::run(kernel, Caller::Turn { conv, turn_id, ceiling, trace }, &call, cancel).await;
    if let CallEnd::Blocked(refusal) = &end {
        conv.emit(kernel, Event::tool_blocked(cid, turn, &call.call_id, &call.name, &refusal.reason));
    }
    let result = end.into_result();
    let ran = !result.is_error;
    complete_call(kernel, conv, turn_id, &call, result);
    ran
}

/// A successful result of one of the hand-over tools (`escalate`, `handoff`).
pub(crate) fn answered(output: impl Into<String>) -> superpi_proto::tool::ToolCallResult {
    superpi_proto::tool::ToolCallResult {
        output: output.into(),
        is_error: false,
        structured: None,
        details: None,
        images: Vec::new(),
    }
}

/// A call's result: published, and stored for the model.
fn complete_call(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    call: &PlannedCall,
    mut result: superpi_proto::tool::ToolCallResult,
) {
    let (cid, turn) = (conv.id, Some(turn_id));
    // An image the call returned (a `read` of a PNG) follows its result, for a model that sees.
    // Against the model this step asked (a cascade may have escalated from the conversation's).
    let model = lock(&conv.turn_model).clone().unwrap_or_else(|| conv.settings().model);
    let images = kernel.images.store_result(&model, &kernel.catalog.providers, &mut result);
    let mut content = vec![ContentBlock::ToolResult {
        tool_call_id: call.call_id.clone(),
        name: call.name.clone(),
        output: result.output.clone(),
        is_error: result.is_error,
        structured: result.structured.clone(),
        details: result.details.clone(),
    }];
    content.extend(images);
    let message = Message { role: Role::Tool, content, usage: None, stop_reason: None };
    let event =
        Event::tool_completed(cid, turn, &call.call_id, &call.name, result.is_error, Value::String(result.output))
            .with_tool_channels(result.structured, result.details);
    if let Err(err) = conv.publish(kernel, event, Some((EntryKind::ToolResult, &message))) {
        tracing::error!("storing a tool result of turn {turn_id}: {err}");
    }
}

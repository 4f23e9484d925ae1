//! The turn loop: context from the stored entries, a provider stream, events, tool calls
//! through the policy gate and the sandbox, and the next model request, until the model stops.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use superpi_policy::Decision;
use superpi_proto::event::PermissionRequestFields;
use superpi_proto::{ContentBlock, EntryKind, Event, Message, Role, Usage};
use superpi_providers::{ModelRequest, StopReason, StreamEvent, Terminal, ToolSpec};
use superpi_sandbox::ToolCall;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::{Kernel, PendingQuestion, PendingUi, lock};
use crate::recovery::OpenCallEnd;

/// A turn stops after this many model calls, whatever the model wants.
const MAX_MODEL_CALLS: usize = 64;

enum Streamed {
    Done(Terminal),
    Failed(Terminal),
    Cancelled,
}

pub(crate) async fn run(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    message: Message,
    cancel: CancellationToken,
) {
    let cid = conv.id;
    let _ = kernel.store.set_turn_status(turn_id, "running", None);
    if let Err(err) = conv.publish(
        kernel,
        Event::message_completed(cid, Some(turn_id), Role::User, message.content.clone(), None),
        Some((EntryKind::User, &message)),
    ) {
        tracing::error!("storing the prompt of turn {turn_id}: {err}");
        let _ = kernel.store.set_turn_status(turn_id, "error", Some(&err.to_string()));
        conv.emit(kernel, Event::turn_error(cid, turn_id, format!("could not store the prompt: {err}")));
        return;
    }
    let title: String = message.text().chars().take(80).collect();
    if !title.trim().is_empty() {
        let _ = kernel.store.set_title(cid, title.trim());
    }
    conv.emit(kernel, Event::turn_started(cid, turn_id));

    let ended = drive(kernel, conv, turn_id, &cancel).await;
    // A turn that stops early leaves no tool call without a result (see recovery.rs).
    let open_call_end = match &ended {
        Ok(TurnEnd::Completed { .. }) => None,
        _ if kernel.shutdown.is_cancelled() => Some(OpenCallEnd::Interrupted),
        Ok(TurnEnd::Cancelled) => Some(OpenCallEnd::Cancelled),
        Err(_) => Some(OpenCallEnd::Failed),
    };
    if let Some(end) = open_call_end {
        crate::recovery::close_after(kernel, conv, turn_id, end);
    }
    let (status, error) = match ended {
        Ok(TurnEnd::Completed { result, stop_reason }) => {
            conv.emit(kernel, Event::turn_completed(cid, turn_id, Some(result), stop_reason));
            ("completed", None)
        }
        Ok(TurnEnd::Cancelled) => {
            conv.emit(kernel, Event::turn_cancelled(cid, turn_id));
            ("cancelled", None)
        }
        Err(message) => {
            conv.emit(kernel, Event::turn_error(cid, turn_id, message.clone()));
            ("error", Some(message))
        }
    };
    if let Err(err) = kernel.store.set_turn_status(turn_id, status, error.as_deref()) {
        tracing::error!("recording the end of turn {turn_id}: {err}");
    }
}

enum TurnEnd {
    Completed { result: String, stop_reason: &'static str },
    Cancelled,
}

async fn drive(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    cancel: &CancellationToken,
) -> Result<TurnEnd, String> {
    let settings = conv.settings();
    let catalog = &kernel.catalog;
    let harness = catalog.harness(Some(&settings.harness)).map_err(|e| e.message)?;
    let provider = catalog.provider(&settings.model).map_err(|e| e.message)?;
    let tools = catalog.tools_for(harness);
    let specs: Vec<ToolSpec> = tools
        .iter()
        .map(|t| ToolSpec {
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
        })
        .collect();

    for _ in 0..MAX_MODEL_CALLS {
        let entries = kernel.store.entries(conv.id).map_err(|e| e.to_string())?;
        let request = ModelRequest {
            model: settings.model.clone(),
            system: Some(harness.prompt.clone()).filter(|p| !p.is_empty()),
            messages: entries.into_iter().map(|e| e.message).collect(),
            tools: specs.clone(),
            max_tokens: None,
        };
        let stream = provider.stream(request);
        let streamed = tokio::select! {
            streamed = stream_model(kernel, conv, turn_id, stream) => streamed,
            _ = cancel.cancelled() => Streamed::Cancelled,
        };
        let terminal = match streamed {
            Streamed::Cancelled => return Ok(TurnEnd::Cancelled),
            Streamed::Failed(terminal) => {
                if !terminal.message.content.is_empty() {
                    store_assistant(kernel, conv, turn_id, &terminal);
                }
                let why = terminal.error.map(|e| e.to_string()).unwrap_or_else(|| "the model stream failed".into());
                return Err(why);
            }
            Streamed::Done(terminal) => terminal,
        };
        store_assistant(kernel, conv, turn_id, &terminal);

        let calls: Vec<(String, String, Value)> = terminal
            .message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall { id, name, arguments } => Some((id.clone(), name.clone(), arguments.clone())),
                _ => None,
            })
            .collect();
        if calls.is_empty() {
            let stop_reason = match terminal.stop_reason {
                StopReason::MaxTokens => "max_tokens",
                StopReason::Refusal => "refusal",
                _ => "end_turn",
            };
            return Ok(TurnEnd::Completed { result: terminal.message.text(), stop_reason });
        }
        for (call_id, name, arguments) in calls {
            if cancel.is_cancelled() {
                return Ok(TurnEnd::Cancelled);
            }
            let settings = conv.settings();
            let workspace = settings.workspace.as_ref().map(PathBuf::from);
            let call = PlannedCall { turn_id, call_id, name, arguments, workspace };
            execute_tool(kernel, conv, call, cancel).await;
        }
        if cancel.is_cancelled() {
            return Ok(TurnEnd::Cancelled);
        }
    }
    Err(format!("the turn stopped after {MAX_MODEL_CALLS} model calls"))
}

fn store_assistant(kernel: &Kernel, conv: &Conversation, turn_id: i64, terminal: &Terminal) {
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
        total.input_tokens += terminal.usage.input_tokens;
        total.output_tokens += terminal.usage.output_tokens;
        *total
    };
    conv.emit(kernel, Event::usage_updated(conv.id, Some(turn_id), terminal.usage, total));
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
                conv.emit(kernel, Event::toolcall_delta(cid, turn, index, Some(delta), Value::Null, id, name))
            }
            StreamEvent::Reset { retry_in_ms } => conv.emit(kernel, Event::stream_reset(cid, turn, retry_in_ms)),
            StreamEvent::Done(terminal) => return Streamed::Done(terminal),
            StreamEvent::Error(terminal) => return Streamed::Failed(terminal),
            _ => {}
        }
    }
    Streamed::Failed(Terminal {
        stop_reason: StopReason::Error,
        message: Message { role: Role::Assistant, content: Vec::new(), usage: None, stop_reason: None },
        usage: Usage::default(),
        response_id: None,
        error: Some(superpi_providers::ProviderError::Protocol {
            provider: "stream".into(),
            message: "the stream ended without a terminal event".into(),
        }),
    })
}

struct PlannedCall {
    turn_id: i64,
    call_id: String,
    name: String,
    arguments: Value,
    workspace: Option<PathBuf>,
}

/// What a finished call hands back to the model.
struct CallResult {
    output: String,
    is_error: bool,
    structured: Option<Value>,
    details: Option<Value>,
}

async fn execute_tool(kernel: &Arc<Kernel>, conv: &Arc<Conversation>, call: PlannedCall, cancel: &CancellationToken) {
    let cid = conv.id;
    let turn = Some(call.turn_id);
    conv.emit(kernel, Event::tool_started(cid, turn, &call.call_id, &call.name, call.arguments.clone(), Vec::new()));
    let result = match decide(kernel, conv, &call, cancel).await {
        Err(reason) => {
            conv.emit(kernel, Event::tool_blocked(cid, turn, &call.call_id, &call.name, &reason));
            CallResult { output: format!("blocked: {reason}"), is_error: true, structured: None, details: None }
        }
        Ok(network) => match editor_read(kernel, conv, &call, cancel).await {
            Some(result) => result,
            None => run_confined(kernel, conv, &call, network, cancel).await,
        },
    };
    let message = Message {
        role: Role::Tool,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: call.call_id.clone(),
            name: call.name.clone(),
            output: result.output.clone(),
            is_error: result.is_error,
            structured: result.structured.clone(),
            details: result.details.clone(),
        }],
        usage: None,
        stop_reason: None,
    };
    let event =
        Event::tool_completed(cid, turn, &call.call_id, &call.name, result.is_error, Value::String(result.output))
            .with_tool_channels(result.structured, result.details);
    if let Err(err) = conv.publish(kernel, event, Some((EntryKind::ToolResult, &message))) {
        tracing::error!("storing a tool result of turn {}: {err}", call.turn_id);
    }
}

/// The policy's decision, with a person asked where it allows. `Ok(network)` to run.
async fn decide(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    call: &PlannedCall,
    cancel: &CancellationToken,
) -> Result<bool, String> {
    let Some(tool) = kernel.catalog.tool(&call.name) else {
        return Err(format!("unknown tool `{}`", call.name));
    };
    let (decision, may_ask, timeout) = {
        let policy = lock(&conv.policy);
        let policy = policy.as_ref().map_err(Clone::clone)?;
        (
            policy.decide(tool, &call.arguments),
            policy.may_ask(conv.has_interactive_watcher()),
            policy.question_timeout(),
        )
    };
    let decision = match decision {
        Decision::Ask { ref reason, risk, .. } if may_ask => {
            let reason = reason.clone();
            let answer = ask(kernel, conv, call, &reason, Some(risk.as_str().to_string()), timeout, cancel).await;
            settle(kernel, conv, decision, answer.as_deref())
        }
        Decision::Ask { .. } => settle(kernel, conv, decision, None),
        other => other,
    };
    match decision {
        Decision::Allow { network } => Ok(network),
        Decision::Deny { reason, .. } | Decision::Ask { reason, .. } => Err(reason),
    }
}

/// Settles a question with a person's answer (None: unanswered, which fails closed). An
/// "always" answer is stored with the conversation.
fn settle(kernel: &Kernel, conv: &Conversation, decision: Decision, option_id: Option<&str>) -> Decision {
    let mut policy = lock(&conv.policy);
    let policy = match policy.as_mut() {
        Ok(policy) => policy,
        Err(reason) => return Decision::Deny { reason: reason.clone(), rule: superpi_policy::Rule::Unanswered },
    };
    let before = policy.overrides().clone();
    let decision = policy.answer(decision, option_id);
    if *policy.overrides() != before {
        let stored = serde_json::to_string(policy.overrides())
            .map_err(|e| e.to_string())
            .and_then(|json| kernel.store.set_permission_overrides(conv.id, &json).map_err(|e| e.to_string()));
        if let Err(err) = stored {
            tracing::error!("conversation {}: storing a permission answer: {err}", conv.id);
        }
    }
    decision
}

/// Publishes a permission request and waits for an answer, the timeout or cancel. Returns
/// the chosen option id (None when unanswered); a person's answer also publishes ui_resolved.
async fn ask(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    call: &PlannedCall,
    reason: &str,
    risk: Option<String>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Option<String> {
    let request_id = kernel.next_request_id();
    let (tx, rx) = oneshot::channel();
    let options: Vec<String> = superpi_proto::event::permission_options().into_iter().map(|o| o.option_id).collect();
    lock(&kernel.questions).insert(
        request_id.clone(),
        PendingQuestion { conversation_id: conv.id, owner: conv.owner.clone(), options: options.clone(), answer: tx },
    );
    let fields = PermissionRequestFields {
        request_id: request_id.clone(),
        tool_call_id: call.call_id.clone(),
        tool_name: call.name.clone(),
        arguments: call.arguments.clone(),
        reason: reason.to_string(),
        risk,
    };
    conv.emit(kernel, Event::permission_request(conv.id, Some(call.turn_id), fields));
    let answer = tokio::select! {
        answer = rx => answer.ok(),
        _ = tokio::time::sleep(timeout) => None,
        _ = cancel.cancelled() => None,
    };
    lock(&kernel.questions).remove(&request_id);
    let outcome = match &answer {
        Some(option) if options.contains(option) => json!({"outcome": "selected", "option_id": option}),
        Some(other) => json!({"outcome": "invalid", "option_id": other}),
        None if cancel.is_cancelled() => json!({"outcome": "cancelled"}),
        None => json!({"outcome": "timeout"}),
    };
    conv.emit(kernel, Event::ui_resolved(conv.id, Some(call.turn_id), &request_id, outcome));
    answer.filter(|a| options.contains(a))
}

/// How long a frontend has to answer a `read_text_file` question before the read goes to disk.
const EDITOR_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// An allowed read that an editor's buffer can stand in for (the registry says which) asks a
/// watching editor for its buffer first (it may hold unsaved changes). `None`: run the tool
/// in the sandbox, as without an editor.
async fn editor_read(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    call: &PlannedCall,
    cancel: &CancellationToken,
) -> Option<CallResult> {
    if conv.file_readers.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        return None;
    }
    let reader = *kernel.sandbox.registry().editor_read(&call.name)?;
    let workspace = call.workspace.as_ref()?;
    let raw = call.arguments.get(reader.path)?.as_str()?;
    let path = normalize(workspace, raw);
    let offset = call.arguments.get(reader.offset).and_then(Value::as_u64).map(|n| n as usize);
    let limit = call.arguments.get(reader.limit).and_then(Value::as_u64).map(|n| n as usize);
    let request_id = kernel.next_request_id();
    let (tx, rx) = oneshot::channel();
    lock(&kernel.ui_requests).insert(request_id.clone(), PendingUi { owner: conv.owner.clone(), answer: tx });
    let mut request = serde_json::Map::new();
    request.insert("kind".into(), json!("read_text_file"));
    request.insert("path".into(), json!(path.display().to_string()));
    request.insert("tool_call_id".into(), json!(call.call_id));
    if let Some(offset) = offset {
        request.insert("offset".into(), json!(offset));
    }
    if let Some(limit) = limit {
        request.insert("limit".into(), json!(limit));
    }
    conv.emit(kernel, Event::ui_request(conv.id, Some(call.turn_id), &request_id, request));
    let answer = tokio::select! {
        answer = rx => answer.ok(),
        _ = tokio::time::sleep(EDITOR_READ_TIMEOUT) => None,
        _ = cancel.cancelled() => None,
    };
    lock(&kernel.ui_requests).remove(&request_id);
    let content = answer.as_ref().and_then(|a| a.get("content")).and_then(Value::as_str).map(str::to_string);
    let outcome = match (&answer, &content) {
        (_, Some(_)) => json!({"outcome": "editor"}),
        (Some(_), None) => json!({"outcome": "disk"}),
        (None, None) => json!({"outcome": "timeout"}),
    };
    conv.emit(kernel, Event::ui_resolved(conv.id, Some(call.turn_id), &request_id, outcome));
    let content = content?;
    let shown = path.strip_prefix(workspace).map(|p| p.display().to_string()).unwrap_or(raw.to_string());
    let outcome = (reader.render)(&shown, &content, offset, limit);
    Some(CallResult {
        output: outcome.output,
        is_error: outcome.is_error,
        structured: outcome.structured,
        details: outcome.details,
    })
}

/// Drops every open question of a conversation: their waiters fail closed.
pub(crate) fn cancel_questions(kernel: &Kernel, conversation_id: i64) {
    lock(&kernel.questions).retain(|_, q| q.conversation_id != conversation_id);
}

async fn run_confined(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    call: &PlannedCall,
    network: bool,
    cancel: &CancellationToken,
) -> CallResult {
    let Some(workspace) = call.workspace.clone() else {
        return CallResult {
            output: "blocked: this conversation has no workspace".into(),
            is_error: true,
            structured: None,
            details: None,
        };
    };
    // Concurrent writes of one file (from any conversation) run one at a time; the tool's
    // facts say which arguments it writes. Locks are taken in path order, so two calls that
    // write the same paths cannot wait on each other.
    let mut written: Vec<PathBuf> = match kernel.catalog.tool(&call.name) {
        Some(tool) => tool.written_paths(&call.arguments).into_iter().map(|p| normalize(&workspace, p)).collect(),
        None => Vec::new(),
    };
    written.sort();
    written.dedup();
    let mut _path_guards = Vec::with_capacity(written.len());
    for path in written {
        _path_guards.push(kernel.lock_path(path).await);
    }
    let (progress_tx, mut progress_rx) = mpsc::channel::<String>(64);
    let forward = {
        let (kernel, conv) = (kernel.clone(), conv.clone());
        let (turn, id, name) = (call.turn_id, call.call_id.clone(), call.name.clone());
        tokio::spawn(async move {
            while let Some(chunk) = progress_rx.recv().await {
                conv.emit(&kernel, Event::tool_output(conv.id, Some(turn), &id, &name, chunk));
            }
        })
    };
    let outcome = kernel
        .sandbox
        .run(
            ToolCall {
                conversation_id: conv.id,
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                workspace: Some(workspace),
                network,
                timeout: None,
            },
            cancel.child_token(),
            Some(progress_tx),
        )
        .await;
    let _ = forward.await;
    CallResult {
        output: outcome.output,
        is_error: outcome.is_error,
        structured: outcome.structured,
        details: outcome.details,
    }
}

/// A path argument made absolute against the workspace and cleaned of `.` and `..`
/// (lexically: the file may not exist yet).
fn normalize(workspace: &std::path::Path, path: &str) -> PathBuf {
    use std::path::Component;
    let joined = workspace.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalize;
    use std::path::{Path, PathBuf};

    #[test]
    fn paths_normalize_against_the_workspace() {
        let ws = Path::new("/w/repo");
        assert_eq!(normalize(ws, "a/./b.txt"), PathBuf::from("/w/repo/a/b.txt"));
        assert_eq!(normalize(ws, "a/../b.txt"), PathBuf::from("/w/repo/b.txt"));
        assert_eq!(normalize(ws, "/etc/x"), PathBuf::from("/etc/x"));
    }
}

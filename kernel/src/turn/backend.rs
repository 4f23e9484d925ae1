//! A turn that an agent backend runs (a harness that names `claude-code`, ...): the
//! backend's program runs the whole turn with its own tools (superpi-backends starts it
//! through the sandbox and translates its output); this module publishes what it reports as
//! the kernel's events and entries, asks its approval requests through the conversation's
//! watchers (failing closed with nobody to ask), keeps the backend's session id, and kills
//! the program on cancel (dropping the running turn).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use superpi_backends::{Approval, ApprovalRequest, BackendEvent, BackendKind, PromptImage, TurnSpec};
use superpi_policy::{Decision, Mode, Remember, Risk, Rule};
use superpi_proto::event::PermissionRequestFields;
use superpi_proto::method::BackendStatus;
use superpi_proto::{ContentBlock, EntryKind, Event, Message, Role};
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::turn::backend_seed::Start;
use crate::turn::permission::Asked;
use crate::turn::recovery::TurnEnd;

/// `harness.list`'s `backends`: each backend's program and version, or why it is unavailable.
pub(crate) async fn statuses(kernel: &Kernel) -> Vec<BackendStatus> {
    let mut out = Vec::new();
    for backend in &kernel.catalog.backends {
        out.push(backend.status().await);
    }
    out
}

/// The backend that runs this conversation's turns, if its harness names one.
pub(crate) fn backend_of(kernel: &Kernel, conv: &Conversation) -> Option<BackendKind> {
    kernel.catalog.harness(Some(&conv.settings().harness)).ok().and_then(|h| h.backend)
}

/// The prompt's images with their bytes, read back from the store.
fn prompt_images(kernel: &Kernel, prompt: &Message) -> Result<Vec<PromptImage>, String> {
    let mut out = Vec::new();
    for block in &prompt.content {
        let ContentBlock::Image { media_type, data, sha256 } = block else { continue };
        let data = match (data, sha256) {
            (Some(data), _) => data.clone(),
            (None, Some(sha256)) => kernel.images.encoded(sha256)?.ok_or("a prompt's image is no longer stored")?,
            (None, None) => return Err("a prompt's image has neither bytes nor a digest".into()),
        };
        out.push(PromptImage { media_type: media_type.clone(), data });
    }
    Ok(out)
}

pub(crate) async fn drive(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    kind: BackendKind,
    ceiling: Mode,
    prompt: &Message,
    cancel: &CancellationToken,
) -> Result<TurnEnd, String> {
    let catalog = &kernel.catalog;
    let program = catalog
        .backends
        .iter()
        .find(|b| b.kind == kind)
        .ok_or_else(|| format!("{} is not known to this kernel", kind.title()))?
        .program
        .clone()?;
    let workspace =
        conv.settings().workspace.map(PathBuf::from).ok_or("a backend works in a workspace; none is set")?;
    // Its own configuration in the workspace (which a tool call may have written) only as the
    // user accepted it; the file, the reason and the fix otherwise.
    superpi_policy::backend_files::check(&catalog.config_dir, &workspace, kind).map_err(|e| e.to_string())?;
    let checked_in = workspace.clone();
    // The conversation's mode, lowered to the submitter's ceiling, chooses the backend's own.
    let mode = lock(&conv.policy).as_ref().map(|p| p.mode().min(ceiling)).map_err(Clone::clone)?;
    let home = catalog.backend_sessions.home(kind).map_err(|e| format!("{}'s state directory: {e}", kind.title()))?;
    // The backend's own session when this machine keeps one that saw everything before; else a
    // new one, given the history from the store (`backend_seed.rs`).
    let cid = conv.id;
    let entries = kernel.store.entries(cid).map_err(|e| format!("reading the conversation's history: {e}"))?;
    // The seq of the last entry this turn stored: what the session has seen, kept with its id.
    let mut last_entry = entries.iter().filter(|e| e.turn_id == Some(turn_id)).map(|e| e.seq).max().unwrap_or(0);
    let kept = catalog.backend_sessions.get(kind, cid);
    let (resume, prompt_text) = match crate::turn::backend_seed::start(kept, &entries, turn_id) {
        Start::Resume(id) => (Some(id), prompt.text()),
        Start::Fresh => (None, prompt.text()),
        Start::Seeded { history, why } => {
            let notice = format!(
                "{}: {why}; a new session starts, given the conversation so far from superpi's history",
                kind.title()
            );
            conv.emit(kernel, Event::notice(cid, Some(turn_id), "info", notice));
            (None, crate::turn::backend_seed::seeded_prompt(&history, &prompt.text()))
        }
    };
    drop(entries);
    let mut session = resume.clone();
    let env = superpi_backends::env_keys(kind)
        .iter()
        .filter_map(|key| std::env::var(key).ok().map(|value| (key.to_string(), value)))
        .collect();
    let spec = TurnSpec {
        kind,
        install_dirs: superpi_backends::install_dirs(&program),
        program,
        workspace,
        mode,
        prompt: prompt_text,
        images: prompt_images(kernel, prompt)?,
        model: backend_model(catalog, kind, &conv.settings().model),
        effort: conv.settings().effort.filter(|_| superpi_backends::effort_refusal(kind).is_none()),
        resume,
        home,
        env,
        confined: !kernel.sandbox.config().disabled,
        endpoint: (kind == BackendKind::Opencode).then(|| endpoint(catalog, &conv.settings().model)).flatten(),
    };
    let mut turn = match kind {
        BackendKind::Opencode => catalog.opencode.start(&kernel.sandbox, spec).await?,
        _ => superpi_backends::start(&kernel.sandbox, spec).await?,
    };
    let at = Some(turn_id);
    // The names of the calls the backend announced, for their results.
    let mut calls: HashMap<String, String> = HashMap::new();
    let mut rechecked = false;
    loop {
        // Cancel drops the running turn, which kills the program.
        let event = tokio::select! {
            event = turn.next() => event,
            _ = cancel.cancelled() => return Ok(TurnEnd::Cancelled),
        };
        let Some(event) = event else {
            return Err(format!("{} ended without a word on its turn", kind.title()));
        };
        if !rechecked {
            // By its first word the program has read its configuration: a file rewritten since
            // the check (by another conversation's call, say) ends the turn, killing it.
            rechecked = true;
            superpi_policy::backend_files::check(&catalog.config_dir, &checked_in, kind)
                .map_err(|e| format!("{e} (It changed while {} started; the turn is stopped.)", kind.title()))?;
        }
        match event {
            BackendEvent::Session { id } => {
                keep_session(kernel, kind, cid, &id, last_entry);
                session = Some(id);
            }
            BackendEvent::TextDelta { index, delta } => conv.emit(kernel, Event::text_delta(cid, at, index, delta)),
            BackendEvent::ThinkingDelta { index, delta } => {
                conv.emit(kernel, Event::thinking_delta(cid, at, index, delta))
            }
            BackendEvent::Message { content } => {
                let message = Message { role: Role::Assistant, content, usage: None, stop_reason: None };
                let event = Event::message_completed(cid, at, Role::Assistant, message.content.clone(), None);
                match conv.publish(kernel, event, Some((EntryKind::Assistant, &message))) {
                    Ok(seq) => last_entry = seq,
                    Err(err) => tracing::error!("storing an answer of turn {turn_id}: {err}"),
                }
                for block in message.content {
                    if let ContentBlock::ToolCall { id, name, arguments } = block {
                        conv.emit(kernel, Event::tool_started(cid, at, &id, &name, arguments, Vec::new()));
                        calls.insert(id, name);
                    }
                }
            }
            BackendEvent::ToolResult { tool_call_id, output, is_error } => {
                let name = calls.remove(&tool_call_id).unwrap_or_default();
                if let Some(seq) = store_result(kernel, conv, turn_id, tool_call_id, name, output, is_error) {
                    last_entry = seq;
                }
            }
            BackendEvent::ApprovalRequest(request) => {
                let approval = approve(kernel, conv, turn_id, kind, &request, cancel).await;
                turn.answer(&request, &approval).await;
            }
            BackendEvent::Retrying { attempt, delay_ms, reason } => conv.emit(
                kernel,
                Event::notice(
                    cid,
                    at,
                    "warning",
                    format!(
                        "{} retries its model request ({reason}; attempt {attempt}, in {delay_ms} ms)",
                        kind.title()
                    ),
                ),
            ),
            BackendEvent::Notice { level, message } => conv.emit(kernel, Event::notice(cid, at, level, message)),
            BackendEvent::Plan { entries } => conv.emit(kernel, Event::plan_updated(cid, at, entries)),
            BackendEvent::End { result, stop_reason, usage, cost_usd } => {
                // The session saw the whole turn.
                if let Some(id) = &session {
                    keep_session(kernel, kind, cid, id, last_entry);
                }
                let total = {
                    let mut total = lock(&conv.usage_total);
                    total.add(usage);
                    *total
                };
                let model = conv.settings().model;
                let cost = crate::turn::cost::charge(kernel, conv, &model, usage, cost_usd);
                conv.emit(kernel, Event::usage_updated(cid, at, usage, total).with_cost(cost));
                let stop_reason = match stop_reason.as_str() {
                    "max_tokens" => "max_tokens",
                    "refusal" => "refusal",
                    _ => "end_turn",
                };
                return Ok(TurnEnd::Completed { result, stop_reason });
            }
            BackendEvent::Failed { message } => return Err(message),
            BackendEvent::Unsupported { .. } | BackendEvent::Write { .. } => {}
        }
    }
}

/// The conversation's model in the backend's own naming, when one was chosen for it (not the
/// kernel's default, which is for superpi's own harnesses) and it is one of the backend's
/// vendor (`anthropic/claude-...` for Claude Code, an OpenAI model for Codex, a Gemini model
/// for Gemini CLI); else none, and the backend chooses its own. OpenCode gets its model as
/// an [`superpi_backends::Endpoint`] instead.
fn backend_model(catalog: &crate::catalog::Catalog, kind: BackendKind, model: &str) -> Option<String> {
    use superpi_providers::ProviderKind;
    if model == catalog.default_model().0 {
        return None;
    }
    let route = superpi_providers::route(model, &catalog.providers).ok()?;
    let vendor = match kind {
        BackendKind::ClaudeCode => ProviderKind::Anthropic,
        BackendKind::Codex => ProviderKind::Openai,
        BackendKind::GeminiCli => ProviderKind::Gemini,
        BackendKind::Opencode => return None,
    };
    (route.kind == vendor).then_some(route.model)
}

/// OpenCode's model: the model API superpi routes the conversation's model to (its default
/// included: OpenCode has no vendor of its own), with its key. None for the `mock` model, a
/// model superpi cannot route, or a key that comes from an auth command (OpenCode then
/// chooses its own model, as its own configuration says).
fn endpoint(catalog: &crate::catalog::Catalog, model: &str) -> Option<superpi_backends::Endpoint> {
    use superpi_providers::router::Auth;
    let route = superpi_providers::route(model, &catalog.providers).ok()?;
    let api_key = match route.auth {
        Auth::None => None,
        Auth::Key(key) => Some(key),
        Auth::Command { .. } => return None,
    };
    (route.kind != superpi_providers::ProviderKind::Mock).then(|| superpi_backends::Endpoint {
        api: route.kind.as_str().to_string(),
        base_url: route.base_url,
        api_key,
        model: route.model,
    })
}

/// Keeps the backend's session id of the conversation on this machine, with the seq of the last
/// history entry it saw.
fn keep_session(kernel: &Kernel, kind: BackendKind, conversation_id: i64, id: &str, through_seq: u64) {
    if let Err(err) = kernel.catalog.backend_sessions.set(kind, conversation_id, id, through_seq) {
        tracing::error!(conversation = conversation_id, "storing {kind}'s session id: {err}");
    }
}

/// Stores a call's result the backend reported: its seq.
fn store_result(
    kernel: &Kernel,
    conv: &Conversation,
    turn_id: i64,
    tool_call_id: String,
    name: String,
    output: String,
    is_error: bool,
) -> Option<u64> {
    let message = Message {
        role: Role::Tool,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: tool_call_id.clone(),
            name: name.clone(),
            output: output.clone(),
            is_error,
            structured: None,
            details: None,
        }],
        usage: None,
        stop_reason: None,
    };
    let event = Event::tool_completed(conv.id, Some(turn_id), &tool_call_id, &name, is_error, Value::String(output));
    match conv.publish(kernel, event, Some((EntryKind::ToolResult, &message))) {
        Ok(seq) => Some(seq),
        Err(err) => {
            tracing::error!("storing a tool result of turn {turn_id}: {err}");
            None
        }
    }
}

/// A backend's approval request as a superpi question; with nobody to ask, or no answer, it
/// is refused (fails closed, as every question does). An allow_always or reject_always answer
/// is remembered for the conversation (stored with it, like those about superpi's own tools):
/// the same command (or, for a call without one, the same tool of the same backend) is then
/// allowed or refused without asking.
async fn approve(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    kind: BackendKind,
    request: &ApprovalRequest,
    cancel: &CancellationToken,
) -> Approval {
    let remember = remembered(kind, request);
    let reason =
        request.reason.clone().unwrap_or_else(|| format!("{} asks to run {}", kind.title(), request.tool_name));
    let watched = crate::turn::cluster_holder::interactive_watcher(kernel, conv);
    let (recalled, asking) = {
        let policy = lock(&conv.policy);
        let policy = policy.as_ref().ok();
        let recalled = policy.and_then(|p| p.overrides().recall(&remember));
        let asking = policy.filter(|p| p.may_ask(watched)).map(|p| {
            // A remote frontend may allow what its ceiling would ask about: nothing in `plan`.
            let remote_may_allow = kernel.catalog.max_mode(p.harness(), true) > Mode::Plan;
            Asked { turn_id, timeout: p.question_timeout(), remote_may_allow, lasting: None }
        });
        (recalled, asking)
    };
    match recalled {
        Some(true) => return Approval::Allow,
        Some(false) => {
            return Approval::Deny { message: "The person refused this for the rest of the conversation.".into() };
        }
        None => {}
    }
    let Some(asked) = asking else {
        return Approval::Deny { message: "superpi has nobody to ask about this call, so it is refused.".into() };
    };
    let fields = |request_id: String| PermissionRequestFields {
        request_id,
        tool_call_id: request.tool_call_id.clone().unwrap_or_else(|| request.id.clone()),
        tool_name: request.tool_name.clone(),
        arguments: request.input.clone(),
        reason: reason.clone(),
        risk: None,
    };
    let answer = crate::turn::permission::ask(kernel, conv, asked, fields, cancel).await;
    // The backend's own policy asked; the answer settles it, recording a lasting one.
    let question = Decision::Ask { reason, risk: Risk::Medium, network: true, remember };
    match crate::turn::permission::settle(kernel, conv, question, answer.as_deref()) {
        Decision::Allow { .. } => Approval::Allow,
        Decision::Deny { rule: Rule::Rejected, .. } => {
            Approval::Deny { message: "The person refused this call.".into() }
        }
        _ => Approval::Deny { message: "Nobody answered in time, so the call is refused.".into() },
    }
}

/// What a lasting answer about a backend's request remembers: its shell command (words
/// joined by spaces, as for superpi's own shell), else the backend's tool
/// (`claude-code.Write`).
fn remembered(kind: BackendKind, request: &ApprovalRequest) -> Remember {
    let command = match request.input.get("command") {
        Some(Value::String(line)) => Some(line.split_whitespace().collect::<Vec<_>>().join(" ")),
        Some(Value::Array(words)) => Some(
            words
                .iter()
                .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    };
    match command.filter(|c| !c.is_empty()) {
        Some(command) => Remember::Commands(vec![command]),
        None => Remember::Tool(format!("{kind}.{}", request.tool_name)),
    }
}

//! The kernel's methods: each request's params, checks and result.

use std::sync::Arc;

use serde_json::{Value, json};
use superpi_proto::message::codes;
use superpi_proto::method::{
    CommandListResult, ConversationInfo, ForkParams, HistoryParams, HistoryResult, ListParams, ListResult, Method,
    OpenParams, SubmitParams, SubmitResult, ToolListResult, WatchParams, WatchResult,
};
use superpi_proto::{ContentBlock, Effort, ErrorObject, Event, Message, Role};
use tokio::sync::oneshot;

use crate::conversation::{Conversation, Input, Steer};
use crate::forwarded_jobs;
use crate::kernel::Kernel;
use crate::live::{self, Found};
use crate::peer::Peer;
use crate::questions::{Answerer, Refused};
use crate::store::{ConversationRow, ConversationSettings, JobKind, NewConversation, Notice, StoreError};
use crate::subscription::{self, WatchSpec};
use crate::sync::lock;

/// A handled request: its result, and a signal to fire once the response is queued (a
/// subscription starts sending only after its watch was answered).
pub(crate) struct Handled {
    pub result: Result<Value, ErrorObject>,
    pub after_response: Option<oneshot::Sender<()>>,
}

type Reply = Result<Value, ErrorObject>;

fn internal(err: StoreError) -> ErrorObject {
    tracing::error!("store error: {err}");
    ErrorObject::new(codes::INTERNAL_ERROR, format!("store error: {err}"))
}

fn not_found(id: i64) -> ErrorObject {
    ErrorObject::new(codes::NOT_FOUND, format!("conversation {id} not found"))
}

fn stopping() -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, "the kernel is stopping")
}

fn to_value<T: serde::Serialize>(t: T) -> Reply {
    serde_json::to_value(t).map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
}

pub(crate) async fn handle(kernel: &Arc<Kernel>, peer: &Arc<Peer>, method: &str, params: Value) -> Handled {
    let method = match Method::parse(method, params) {
        Ok(method) => method,
        Err(err) => return Handled { result: Err(err), after_response: None },
    };
    if let Method::SessionWatch(p) = method {
        return watch(kernel, peer, p);
    }
    let result = match method {
        Method::SessionOpen(p) => open(kernel, peer, p),
        Method::SessionSubmit(p) => submit(kernel, peer, p).await,
        Method::SessionUnwatch(p) => {
            let removed = lock(&peer.subscriptions).remove(&p.subscription).is_some();
            if removed {
                Ok(json!({"unwatched": true}))
            } else {
                Err(ErrorObject::new(codes::NOT_FOUND, format!("no subscription {}", p.subscription)))
            }
        }
        Method::SessionCancel(p) => cancel(kernel, peer, p.conversation_id).await,
        Method::SessionList(p) => list(kernel, peer, p),
        Method::SessionHistory(p) => history(kernel, peer, p),
        Method::SessionFork(p) => fork(kernel, peer, p),
        Method::SessionSetMode(p) => set_mode(kernel, peer, p.conversation_id, &p.mode),
        Method::SessionSetModel(p) => set_model(kernel, peer, p.conversation_id, &p.model),
        Method::SessionSetEffort(p) => set_effort(kernel, peer, p.conversation_id, p.effort),
        Method::SessionCompact(p) => match found(kernel, peer, p.conversation_id) {
            Ok(Found::Here(conv)) => crate::compaction::on_demand(&conv).await,
            Ok(Found::Elsewhere { .. }) => forwarded_jobs::forward(kernel, p.conversation_id, JobKind::Compact).await,
            Err(err) => Err(err),
        },
        Method::SessionClear(p) => match found(kernel, peer, p.conversation_id) {
            Ok(Found::Here(conv)) => crate::compaction::clear_between_turns(&conv).await,
            Ok(Found::Elsewhere { .. }) => forwarded_jobs::forward(kernel, p.conversation_id, JobKind::Clear).await,
            Err(err) => Err(err),
        },
        Method::SessionUndo(p) => match found(kernel, peer, p.conversation_id) {
            Ok(Found::Here(conv)) => {
                let harness = kernel.catalog.harness(Some(&conv.settings().harness)).map_err(|e| e.message);
                let ceiling = harness.map_or(superpi_policy::Mode::Plan, |h| kernel.catalog.max_mode(h, peer.remote));
                crate::checkpoint::undo(kernel, &conv, ceiling, p.turn_id).await
            }
            // The workspace is on the machine of the kernel that runs the conversation.
            Ok(Found::Elsewhere { holder, .. }) => Err(ErrorObject::new(
                codes::RUN_ELSEWHERE,
                format!(
                    "conversation {} is run by kernel {holder}, whose machine holds its workspace: undo through that kernel",
                    p.conversation_id
                ),
            )),
            Err(err) => Err(err),
        },
        Method::CommandList(p) => command_list(kernel, peer, p.conversation_id),
        Method::HarnessList => Ok(json!({
            "harnesses": kernel.catalog.harness_infos(),
            "backends": crate::backend_turn::statuses(kernel).await,
        })),
        Method::ModelList => Ok(json!({"models": kernel.catalog.models()})),
        Method::ToolCancel(p) => Ok(json!({"cancelled": crate::tools_direct::cancel(kernel, peer, &p.call_id)})),
        Method::PermissionRespond(p) => respond(kernel, peer, &p.request_id, p.option_id),
        Method::UiRespond(p) => ui_respond(kernel, peer, &p.request_id, p.outcome),
        Method::ToolList(p) => tool_list(kernel, p.harness.as_deref()),
        Method::ToolCall(p) => crate::tools_direct::call(kernel, peer, p).await,
        Method::KernelStatus => status(kernel, peer),
        Method::KernelMetrics => to_value(kernel.telemetry.metrics.snapshot()),
        Method::ScheduleAdd(p) => schedule_add(kernel, peer, p),
        Method::ScheduleList(p) => crate::scheduler::list(kernel, &peer.principal, p.runs),
        Method::ScheduleRemove(p) => crate::scheduler::remove(kernel, &peer.principal, p.id),
        Method::TriggerFire(p) => crate::scheduler::fire(kernel, p).await,
        Method::KernelShutdown => {
            // The stop begins once the answer is queued; connections stay open (and flush)
            // until running turns have ended (server.rs), so the answer reaches the client.
            let (queued, answered) = oneshot::channel();
            let kernel = kernel.clone();
            tokio::spawn(async move {
                let _ = answered.await;
                kernel.shutdown.cancel();
            });
            return Handled { result: Ok(json!({"stopping": true})), after_response: Some(queued) };
        }
        _ => Err(ErrorObject::new(codes::METHOD_NOT_FOUND, "method not served")),
    };
    Handled { result, after_response: None }
}

/// The conversation, wherever it runs, if it exists and the peer's principal owns it. Another
/// principal's conversation answers exactly like a missing one.
fn found(kernel: &Arc<Kernel>, peer: &Peer, id: i64) -> Result<Found, ErrorObject> {
    let found = live::find(kernel, id).map_err(internal)?.ok_or_else(|| not_found(id))?;
    let owner = match &found {
        Found::Here(conv) => &conv.owner,
        Found::Elsewhere { row, .. } => &row.owner,
    };
    if *owner != peer.principal {
        return Err(not_found(id));
    }
    Ok(found)
}

/// `schedule.add`: its runs are turns of the caller's conversation named, or of a new one (of
/// the harness named, default the librarian), at most in the caller's ceiling.
fn schedule_add(kernel: &Arc<Kernel>, peer: &Peer, p: superpi_proto::schedule::ScheduleAddParams) -> Reply {
    let conversation_id = match p.conversation_id {
        Some(id) => {
            found(kernel, peer, id)?;
            id
        }
        None => {
            let title = p.name.clone().filter(|n| !n.trim().is_empty()).unwrap_or_else(|| "Scheduled runs".into());
            let params = OpenParams {
                harness: Some(p.harness.clone().unwrap_or_else(|| superpi_policy::LIBRARIAN.to_string())),
                workspace: p.workspace.clone(),
                title: Some(title),
                ..OpenParams::default()
            };
            let opened: ConversationInfo = serde_json::from_value(open(kernel, peer, params)?)
                .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))?;
            opened.conversation_id
        }
    };
    let row =
        kernel.store.conversation(conversation_id).map_err(internal)?.ok_or_else(|| not_found(conversation_id))?;
    let harness = kernel.catalog.harness(Some(&row.harness))?;
    let ceiling = kernel.catalog.max_mode(harness, peer.remote);
    crate::scheduler::add(kernel, &p, &peer.principal, conversation_id, ceiling)
}

/// `session.open`'s `mcp_servers` for a conversation another kernel runs: they would run beside
/// it there, on another machine, so they are refused with what to do instead.
fn attach_elsewhere(id: i64, holder: &str) -> ErrorObject {
    ErrorObject {
        code: codes::RUN_ELSEWHERE,
        message: format!(
            "conversation {id} is run by kernel {holder} (host/pid/id), another kernel on this database, and \
             MCP servers given with session.open run beside the conversation, on that kernel's machine: they \
             are not attached through this kernel. Open it through that kernel, or again once it has been idle \
             there for its quiet period (the kernel lets it go; the next to open it runs it)"
        ),
        data: Some(json!({"kernel_id": holder, "conversation_id": id, "retry": "when_idle"})),
    }
}

/// A conversation's info wherever it runs.
fn found_info(kernel: &Arc<Kernel>, found: &Found, remote: bool) -> Result<ConversationInfo, ErrorObject> {
    match found {
        Found::Here(conv) => Ok(info(kernel, conv, remote, false)),
        Found::Elsewhere { row, .. } => {
            let running = running_elsewhere(kernel, &[row.id]).contains(&row.id);
            row_info(kernel, row, remote, running)
        }
    }
}

fn info(kernel: &Kernel, conv: &Conversation, remote: bool, created: bool) -> ConversationInfo {
    let settings = conv.settings();
    let max_mode = kernel
        .catalog
        .harness(Some(&settings.harness))
        .map(|h| kernel.catalog.max_mode(h, remote).as_str().to_string())
        .unwrap_or_else(|_| settings.mode.clone());
    ConversationInfo {
        conversation_id: conv.id,
        harness: settings.harness,
        model: settings.model,
        mode: settings.mode,
        max_mode,
        effort: settings.effort,
        rules_files: crate::rules::paths(settings.workspace.as_deref()),
        workspace: settings.workspace,
        title: kernel.store.conversation(conv.id).ok().flatten().and_then(|r| r.title),
        parent_id: conv.row.parent_id,
        created_at_ms: conv.row.created_at_ms,
        status: if conv.is_running() { "running".into() } else { "idle".into() },
        head_seq: conv.head_seq(),
        created,
    }
}

/// The conversations among these that have a turn running on another kernel (none on a store
/// only this kernel uses: every running turn is live here).
fn running_elsewhere(kernel: &Kernel, ids: &[i64]) -> std::collections::HashSet<i64> {
    if !kernel.store.shared() {
        return Default::default();
    }
    kernel.store.running(ids).map(|ids| ids.into_iter().collect()).unwrap_or_else(|err| {
        tracing::warn!("reading which conversations run a turn: {err}");
        Default::default()
    })
}

/// The info of a stored conversation, without making it live when it is not; `running` when
/// another kernel runs a turn of it.
fn row_info(
    kernel: &Arc<Kernel>,
    row: &ConversationRow,
    remote: bool,
    running: bool,
) -> Result<ConversationInfo, ErrorObject> {
    if let Some(conv) = kernel.live.get(row.id) {
        return Ok(info(kernel, &conv, remote, false));
    }
    let max_mode = kernel
        .catalog
        .harness(Some(&row.harness))
        .map(|h| kernel.catalog.max_mode(h, remote).as_str().to_string())
        .unwrap_or_else(|_| row.mode.clone());
    Ok(ConversationInfo {
        conversation_id: row.id,
        harness: row.harness.clone(),
        model: row.model.clone(),
        mode: row.mode.clone(),
        max_mode,
        effort: row.settings.effort,
        workspace: row.workspace.clone(),
        title: row.title.clone(),
        parent_id: row.parent_id,
        created_at_ms: row.created_at_ms,
        status: if running { "running".into() } else { "idle".into() },
        head_seq: kernel.store.head_seq(row.id).map_err(internal)?,
        created: false,
        rules_files: crate::rules::paths(row.workspace.as_deref()),
    })
}

fn open(kernel: &Arc<Kernel>, peer: &Peer, p: OpenParams) -> Reply {
    let attached = attached_servers(&p.mcp_servers)?;
    let existing = match (p.conversation_id, &p.external_id) {
        (Some(id), _) => Some(id),
        (None, Some(external)) => {
            kernel.store.find_external(&peer.frontend, &peer.principal, external).map_err(internal)?
        }
        (None, None) => None,
    };
    if let Some(id) = existing {
        let found = found(kernel, peer, id)?;
        match &found {
            Found::Here(conv) => attach_servers(conv, attached),
            Found::Elsewhere { holder, .. } if attached.is_some() => return Err(attach_elsewhere(id, holder)),
            Found::Elsewhere { .. } => {}
        }
        return to_value(found_info(kernel, &found, peer.remote)?);
    }
    if p.create == Some(false) {
        let what = p.external_id.as_deref().unwrap_or("(none given)");
        return Err(ErrorObject::new(codes::NOT_FOUND, format!("no conversation for session {what}")));
    }
    let harness = kernel.catalog.harness(p.harness.as_deref())?;
    let (model, _) = match &p.model {
        Some(model) => (model.clone(), false),
        None => kernel.catalog.default_model(),
    };
    kernel.catalog.provider(&model)?;
    if let Some(effort) = p.effort {
        kernel.catalog.check_effort(Some(harness), &model, effort)?;
    }
    let mode = kernel.catalog.mode_for(p.mode.as_deref(), harness, peer.remote)?;
    let workspace = match harness.workspace {
        superpi_policy::WorkspaceKind::None => None,
        _ => Some(workspace_root(p.workspace.as_deref())?),
    };
    let row = kernel
        .store
        .create_conversation(&NewConversation {
            owner: peer.principal.clone(),
            harness: harness.id.clone(),
            model,
            mode: mode.as_str().to_string(),
            workspace,
            title: p.title.clone(),
            parent_id: None,
            settings: ConversationSettings { effort: p.effort },
        })
        .map_err(internal)?;
    if let Some(external) = &p.external_id {
        kernel.store.bind_external(&peer.frontend, &peer.principal, external, row.id).map_err(internal)?;
    }
    let conv = live::conversation(kernel, row.id).map_err(internal)?.ok_or_else(|| not_found(row.id))?;
    attach_servers(&conv, attached);
    to_value(info(kernel, &conv, peer.remote, true))
}

type AttachedServers = Option<std::collections::BTreeMap<String, superpi_policy::McpServerConfig>>;

/// `session.open`'s `mcp_servers`, checked: `None` when none are given.
fn attached_servers(servers: &[superpi_proto::method::McpServerParam]) -> Result<AttachedServers, ErrorObject> {
    if servers.is_empty() {
        return Ok(None);
    }
    let mut attached = std::collections::BTreeMap::new();
    for server in servers {
        if !superpi_policy::mcp_servers::valid_server_name(&server.name) || server.command.trim().is_empty() {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!(
                    "mcp_servers: `{}` needs a name of 1 to 32 of a-z, A-Z, 0-9, `_` and `-` (no `__`) and a command",
                    server.name
                ),
            ));
        }
        let config =
            superpi_policy::McpServerConfig::stdio(server.command.clone(), server.args.clone(), server.env.clone());
        attached.insert(server.name.clone(), config);
    }
    Ok(Some(attached))
}

fn attach_servers(conv: &Conversation, attached: AttachedServers) {
    if let Some(servers) = attached {
        *lock(&conv.mcp_servers) = servers;
    }
}

/// A workspace must be an existing absolute directory; it is stored canonical.
fn workspace_root(requested: Option<&str>) -> Result<String, ErrorObject> {
    let path = match requested {
        Some(path) => std::path::PathBuf::from(path),
        None => std::env::current_dir().map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))?,
    };
    if !path.is_absolute() {
        return Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("workspace must be an absolute path: {}", path.display()),
        ));
    }
    let canonical = path
        .canonicalize()
        .map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, format!("workspace {}: {e}", path.display())))?;
    if !canonical.is_dir() {
        return Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("workspace {} is not a directory", path.display()),
        ));
    }
    Ok(canonical.to_string_lossy().into_owned())
}

async fn submit(kernel: &Arc<Kernel>, peer: &Peer, p: SubmitParams) -> Reply {
    let found = found(kernel, peer, p.conversation_id)?;
    let mut content = p.content;
    if let Some(prompt) = p.prompt {
        content.insert(0, ContentBlock::text(prompt));
    }
    let has_text = content.iter().any(|b| match b {
        ContentBlock::Text { text } => !text.trim().is_empty(),
        ContentBlock::Image { .. } => true,
        _ => false,
    });
    if !has_text {
        return Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            "a prompt needs text or an image: give `prompt`, or `text` or `image` content",
        ));
    }
    let (model, workspace, harness) = match &found {
        Found::Here(conv) => {
            let settings = conv.settings();
            (settings.model, settings.workspace, settings.harness)
        }
        Found::Elsewhere { row, .. } => (row.model.clone(), row.workspace.clone(), row.harness.clone()),
    };
    crate::commands::expand_called(&kernel.catalog.config_dir, workspace.as_deref(), &mut content);
    // An agent backend's turn takes images only where its program does (then it is the judge
    // of its model, not superpi's providers).
    let backend = kernel.catalog.harness(Some(&harness)).ok().and_then(|h| h.backend);
    if let Some(kind) = backend
        && content.iter().any(|b| matches!(b, ContentBlock::Image { .. }))
        && let Some(why) = superpi_backends::image_refusal(kind)
    {
        return Err(ErrorObject::new(codes::INVALID_PARAMS, why));
    }
    let judged_by = if backend.is_some() { None } else { Some(model.as_str()) };
    // Stored before the prompt is queued anywhere: the kernel that runs it reads the images
    // from the store (the same database when another kernel holds the conversation).
    kernel
        .images
        .store_prompt(judged_by, &kernel.catalog.providers, &mut content)
        .map_err(|why| ErrorObject::new(codes::INVALID_PARAMS, why))?;
    if kernel.shutdown.is_cancelled() {
        return Err(stopping());
    }
    let message = Message { role: Role::User, content, usage: None, stop_reason: None };
    let conv = match found {
        Found::Here(conv) => conv,
        Found::Elsewhere { row, .. } => return forward_submit(kernel, peer, &row, &message, p.steer),
    };
    // The turn runs at most in the submitter's ceiling: a remote caller's stays the remote
    // one even in a conversation the terminal left in `auto`.
    let harness = kernel.catalog.harness(Some(&conv.settings().harness))?;
    let ceiling = kernel.catalog.max_mode(harness, peer.remote);
    let queued = conv.is_running();
    // Acknowledged means stored: the turn and its prompt are written before the answer.
    let turn_id = kernel.store.create_turn(conv.id, &message).map_err(internal)?;
    let (input, steered) = match p.steer {
        true => {
            let (reply, steered) = oneshot::channel();
            (Input::Steer { steer: Steer { turn_id, message: Box::new(message), ceiling }, reply }, Some(steered))
        }
        false => (Input::Submit { turn_id, message: Box::new(message), ceiling }, None),
    };
    if conv.input.send(input).await.is_err() {
        // The actor stopped (the kernel is stopping) between the check and the send.
        let _ = kernel.store.set_turn_status(turn_id, "error", Some("the kernel is stopping"));
        return Err(stopping());
    }
    // A steering prompt is answered by the running turn it joined; one that found none
    // (or an actor that stopped meanwhile, which records it) is a turn of its own.
    if let Some(steered) = steered
        && let Ok(Some(running)) = steered.await
    {
        return to_value(SubmitResult { turn_id: running, queued: false, steered: true });
    }
    to_value(SubmitResult { turn_id, queued, steered: false })
}

/// Stores a prompt for the kernel that runs the conversation (it takes it from the store at
/// once, told through the database): acknowledged means stored, as for a local one.
fn forward_submit(kernel: &Arc<Kernel>, peer: &Peer, row: &ConversationRow, message: &Message, steer: bool) -> Reply {
    let harness = kernel.catalog.harness(Some(&row.harness))?;
    let ceiling = kernel.catalog.max_mode(harness, peer.remote);
    let turn_id = kernel.store.queue_submit(row.id, message, ceiling.as_str(), steer).map_err(internal)?;
    // Its kernel may have let it go meanwhile: then this one takes it over, prompt and all.
    if let Err(err) = live::find(kernel, row.id) {
        tracing::warn!(conversation = row.id, "after queueing a prompt for another kernel: {err}");
    }
    to_value(SubmitResult { turn_id, queued: true, steered: false })
}

fn watch(kernel: &Arc<Kernel>, peer: &Arc<Peer>, p: WatchParams) -> Handled {
    let found = match found(kernel, peer, p.conversation_id) {
        Ok(found) => found,
        Err(err) => return Handled { result: Err(err), after_response: None },
    };
    let id = kernel.next_subscription_id();
    let spec = WatchSpec {
        id,
        from_seq: p.from_seq,
        window: p.window.unwrap_or(subscription::DEFAULT_WINDOW),
        interactive: p.interactive,
        reads_files: p.reads_files,
    };
    let (start_tx, start_rx) = oneshot::channel();
    let (handle, head) = match found {
        Found::Here(conv) => {
            subscription::start(kernel.store.clone(), kernel.closing.clone(), conv, spec, peer.out.clone(), start_rx)
        }
        Found::Elsewhere { row, .. } => {
            // Woken from before the head is read: no commit falls between.
            let heard = kernel.stored_heads.watch(row.id);
            let head = match kernel.store.head_seq(row.id) {
                Ok(head) => head,
                Err(err) => return Handled { result: Err(internal(err)), after_response: None },
            };
            // Said to the kernel that runs it before the watch is answered, so it sends this
            // watcher its deltas and asks it the questions its turns put.
            let counted = kernel.remote_watchers.count(row.id, spec.interactive, spec.reads_files);
            let (store, closing, out) = (kernel.store.clone(), kernel.closing.clone(), peer.out.clone());
            let stored = subscription::Stored { conversation_id: row.id, head, heard, counted };
            (subscription::start_stored(store, closing, stored, spec, out, start_rx), head)
        }
    };
    lock(&peer.subscriptions).insert(id, handle);
    Handled { result: to_value(WatchResult { subscription: id, head_seq: head }), after_response: Some(start_tx) }
}

async fn cancel(kernel: &Arc<Kernel>, peer: &Peer, id: i64) -> Reply {
    let conv = match found(kernel, peer, id)? {
        Found::Here(conv) => conv,
        Found::Elsewhere { .. } => {
            // Whether a turn ran is the other kernel's to say; it is told through the database.
            kernel.store.notify(Notice::Cancel { conversation_id: id }).map_err(internal)?;
            return Ok(json!({"cancelled": false, "forwarded": true}));
        }
    };
    let (tx, rx) = oneshot::channel();
    if conv.input.send(Input::Cancel { reply: tx }).await.is_err() {
        return Ok(json!({"cancelled": false}));
    }
    Ok(json!({"cancelled": rx.await.unwrap_or(false)}))
}

/// A page of `session.list` holds at most this many conversations.
const LIST_PAGE: u32 = 1000;
/// A page of `session.history` holds at most this many entries, and stops once this many
/// bytes of them are read: a page stays well within the frame limit.
const HISTORY_PAGE: u32 = 1000;
const HISTORY_PAGE_BYTES: usize = 8 * 1024 * 1024;

fn list(kernel: &Arc<Kernel>, peer: &Peer, p: ListParams) -> Reply {
    let limit = p.limit.unwrap_or(100).clamp(1, LIST_PAGE);
    // One more than the page tells whether another follows.
    let mut rows =
        kernel.store.list_conversations(&peer.principal, limit + 1, p.offset.unwrap_or(0)).map_err(internal)?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let ids: Vec<i64> = rows.iter().filter(|row| kernel.live.get(row.id).is_none()).map(|row| row.id).collect();
    let running = running_elsewhere(kernel, &ids);
    let conversations = rows
        .iter()
        .map(|row| row_info(kernel, row, peer.remote, running.contains(&row.id)))
        .collect::<Result<Vec<_>, _>>()?;
    to_value(ListResult { conversations, more })
}

fn history(kernel: &Arc<Kernel>, peer: &Peer, p: HistoryParams) -> Reply {
    let found = found(kernel, peer, p.conversation_id)?;
    let limit = p.limit.unwrap_or(HISTORY_PAGE).clamp(1, HISTORY_PAGE) as usize;
    // The first page says what a view needs beside the entries: the last compaction and plan
    // (read first: a compaction stored meanwhile is among the entries, not missing from them).
    let first = p.after_seq.unwrap_or(0) == 0;
    let id = p.conversation_id;
    let latest = |event_type| -> Result<Option<Event>, ErrorObject> {
        if !first {
            return Ok(None);
        }
        let latest = kernel.store.latest_events(id, event_type, 1).map_err(internal)?;
        Ok(latest.first().and_then(|(_, wire)| Event::from_json(wire).ok()))
    };
    let (last_compaction, last_plan) = (latest("compaction_completed")?, latest("plan_updated")?);
    let (entries, more) =
        kernel.store.entries_page(id, p.after_seq.unwrap_or(0), limit, HISTORY_PAGE_BYTES).map_err(internal)?;
    let info = found_info(kernel, &found, peer.remote)?;
    to_value(HistoryResult { conversation: info, entries, more, last_compaction, last_plan })
}

fn fork(kernel: &Arc<Kernel>, peer: &Peer, p: ForkParams) -> Reply {
    // Wherever the source runs, the fork reads it from the store and runs here.
    found(kernel, peer, p.conversation_id)?;
    let id = p.conversation_id;
    let row = kernel.store.conversation(id).map_err(internal)?.ok_or_else(|| not_found(id))?;
    let forked = kernel.store.fork(&row, &peer.principal, p.at_seq).map_err(internal)?;
    if let Some(fork) = live::conversation(kernel, forked.id).map_err(internal)? {
        crate::recovery::close_forked(kernel, &fork).map_err(internal)?;
    }
    let mut value = row_info(kernel, &forked, peer.remote, false)?;
    value.created = true;
    to_value(value)
}

/// `session.set_mode`. Through a kernel that does not run the conversation, the mode is
/// stored and that kernel told, which applies it and publishes `mode_changed`.
fn set_mode(kernel: &Arc<Kernel>, peer: &Peer, id: i64, mode: &str) -> Reply {
    let found = found(kernel, peer, id)?;
    let harness_id = match &found {
        Found::Here(conv) => conv.settings().harness,
        Found::Elsewhere { row, .. } => row.harness.clone(),
    };
    let harness = kernel.catalog.harness(Some(&harness_id))?;
    let effective = kernel.catalog.mode_for(Some(mode), harness, peer.remote)?;
    let max_mode = kernel.catalog.max_mode(harness, peer.remote);
    let answer = json!({"mode": effective.as_str(), "max_mode": max_mode.as_str()});
    let Found::Here(conv) = found else {
        kernel.store.set_mode(id, effective.as_str()).map_err(internal)?;
        settings_changed(kernel, peer, id)?;
        return Ok(answer);
    };
    {
        // Stored under the settings' lock, as a change told by another kernel is read.
        let mut settings = lock(&conv.settings);
        kernel.store.set_mode(id, effective.as_str()).map_err(internal)?;
        settings.mode = effective.as_str().to_string();
    }
    if let Ok(policy) = lock(&conv.policy).as_mut() {
        policy.set_mode(effective);
    }
    conv.emit(kernel, Event::mode_changed(id, effective.as_str(), Some(max_mode.as_str().to_string())));
    Ok(answer)
}

/// `command.list`: the user-defined commands, with those of the conversation's workspace.
fn command_list(kernel: &Arc<Kernel>, peer: &Peer, id: Option<i64>) -> Reply {
    let workspace = match id.map(|id| found(kernel, peer, id)).transpose()? {
        Some(Found::Here(conv)) => conv.settings().workspace,
        Some(Found::Elsewhere { row, .. }) => row.workspace,
        None => None,
    };
    let commands = crate::commands::load(&kernel.catalog.config_dir, workspace.as_deref().map(std::path::Path::new));
    to_value(CommandListResult { commands: commands.into_values().map(|c| c.info).collect() })
}

/// `session.set_model`; through a kernel that does not run the conversation, as `set_mode`.
fn set_model(kernel: &Arc<Kernel>, peer: &Peer, id: i64, model: &str) -> Reply {
    let found = found(kernel, peer, id)?;
    kernel.catalog.provider(model)?;
    match found {
        Found::Here(conv) => {
            let mut settings = lock(&conv.settings);
            kernel.store.set_model(id, model).map_err(internal)?;
            settings.model = model.to_string();
        }
        Found::Elsewhere { .. } => {
            kernel.store.set_model(id, model).map_err(internal)?;
            settings_changed(kernel, peer, id)?;
        }
    }
    Ok(json!({"model": model}))
}

/// Tells the kernel that runs the conversation that its stored settings changed (it applies
/// them, and says a mode change with the ceiling of the frontend that made it).
fn settings_changed(kernel: &Kernel, peer: &Peer, id: i64) -> Result<(), ErrorObject> {
    kernel.store.notify(Notice::Settings { conversation_id: id, remote: peer.remote }).map_err(internal)
}

/// `session.set_effort`: the thinking effort of the next requests, one the current model takes
/// (`None`: the provider settings' default). A later model that lacks it is sent its nearest.
/// Through a kernel that does not run the conversation, as `set_mode`.
fn set_effort(kernel: &Arc<Kernel>, peer: &Peer, id: i64, effort: Option<Effort>) -> Reply {
    let found = found(kernel, peer, id)?;
    let (model, harness) = match &found {
        Found::Here(conv) => {
            let settings = conv.settings();
            (settings.model, settings.harness)
        }
        Found::Elsewhere { row, .. } => (row.model.clone(), row.harness.clone()),
    };
    if let Some(effort) = effort {
        kernel.catalog.check_effort(kernel.catalog.harness(Some(&harness)).ok(), &model, effort)?;
    }
    let mut settings = kernel.store.conversation(id).map_err(internal)?.ok_or_else(|| not_found(id))?.settings;
    settings.effort = effort;
    match found {
        Found::Here(conv) => {
            let mut held = lock(&conv.settings);
            kernel.store.set_settings(id, &settings).map_err(internal)?;
            held.effort = effort;
        }
        Found::Elsewhere { .. } => {
            kernel.store.set_settings(id, &settings).map_err(internal)?;
            settings_changed(kernel, peer, id)?;
        }
    }
    Ok(json!({"effort": effort}))
}

/// `permission.respond`: to a question this kernel asked, or (not open here) one another kernel
/// asked, through the store.
fn respond(kernel: &Arc<Kernel>, peer: &Peer, request_id: &str, option_id: String) -> Reply {
    let by = Answerer { principal: &peer.principal, remote: peer.remote };
    // A question asked here may have an answer given through another kernel in the store: the
    // store says which came first.
    let first = || crate::elsewhere::first_answer(kernel, request_id, &json!(option_id));
    let answered = match kernel.questions.answer_permission_first(by, request_id, option_id.clone(), first) {
        Err(Refused::NotOpen) => crate::elsewhere::answer_permission(kernel, by, request_id, &option_id),
        here => here,
    };
    match answered {
        Ok(valid) => Ok(json!({"accepted": valid})),
        Err(Refused::NotOpen) => Err(ErrorObject::new(codes::NOT_FOUND, format!("no open question {request_id}"))),
        Err(Refused::AboveRemoteCeiling) => Err(ErrorObject::new(
            codes::FORBIDDEN,
            format!("{request_id}: the remote mode ceiling refuses this call, so a remote frontend cannot allow it"),
        )),
    }
}

fn ui_respond(kernel: &Arc<Kernel>, peer: &Peer, request_id: &str, outcome: Value) -> Reply {
    let first = || crate::elsewhere::first_answer(kernel, request_id, &outcome);
    let answered = match kernel.questions.answer_ui_first(&peer.principal, request_id, outcome.clone(), first) {
        Err(_) => crate::elsewhere::answer_ui(kernel, &peer.principal, request_id, &outcome),
        here => here,
    };
    match answered {
        Ok(waited) => Ok(json!({"accepted": waited})),
        Err(_) => Err(ErrorObject::new(codes::NOT_FOUND, format!("no open request {request_id}"))),
    }
}

fn tool_list(kernel: &Arc<Kernel>, harness: Option<&str>) -> Reply {
    let harness = kernel.catalog.harness(harness)?;
    // A turn's own tools (the plan) have no conversation to act on outside a turn.
    let tools = kernel.catalog.tools_for(harness).into_iter().filter(|t| !t.turn_only).collect();
    to_value(ToolListResult { tools })
}

fn status(kernel: &Kernel, peer: &Peer) -> Reply {
    to_value(superpi_proto::method::KernelStatus {
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        uptime_ms: kernel.activity.uptime().as_millis() as u64,
        clients: kernel.activity.clients(),
        live_conversations: kernel.live.len() as u64,
        kernel_id: kernel.id.clone(),
        // Each live conversation is one whose lease this kernel holds.
        owned_conversations: kernel.live.leases().into_iter().map(|(id, _)| id).collect(),
        data_dir: kernel.config.data_dir.display().to_string(),
        socket: kernel.config.locations().socket_path().display().to_string(),
        // Workspaces and conversations are the local user's business.
        mcp_servers: if peer.remote { Vec::new() } else { kernel.mcp.status() },
    })
}

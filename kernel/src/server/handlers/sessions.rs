//! Conversations: open, submit, watch, cancel, list, history and fork.
//!
//! Over 500 lines: the session methods share the info and settings helpers at the top;
//! `session.open` and its attach and settings helpers are the piece to move out next.

use std::sync::Arc;

use super::{Handled, Reply, found, internal, not_found, stopping, to_value};

use serde_json::json;
use superpi_proto::message::codes;
use superpi_proto::method::{
    ConversationInfo, ForkParams, HistoryParams, HistoryResult, ListParams, ListResult, OpenParams, SubmitParams,
    SubmitResult, WatchParams, WatchResult,
};
use superpi_proto::{ContentBlock, ErrorObject, Event, Message, Role};
use tokio::sync::oneshot;

use crate::conversation::{Conversation, Input, Steer};
use crate::features::workspaces::{listed, stored};
use crate::kernel::Kernel;
use crate::live::{self, Found};
use crate::server::peer::Peer;
use crate::sync::lock;
use crate::watch::subscription::{self, WatchSpec};
use superpi_store::{ConversationRow, ConversationSettings, ListFrom, NewConversation, Notice};

/// `session.open`'s `mcp_servers` for a conversation another kernel runs: they would run beside
/// it there, on another machine, so they are refused with what to do instead.
pub(super) fn attach_elsewhere(id: i64, holder: &str) -> ErrorObject {
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
pub(super) fn found_info(kernel: &Arc<Kernel>, found: &Found, remote: bool) -> Result<ConversationInfo, ErrorObject> {
    match found {
        Found::Here(conv) => Ok(info(kernel, conv, remote, false)),
        Found::Elsewhere { row, .. } => {
            let running = running_elsewhere(kernel, &[row.id]).contains(&row.id);
            row_info(kernel, row, remote, running, RowEvents::read(kernel, row.id)?, &mut RulesFiles::default())
        }
    }
}

pub(super) fn info(kernel: &Kernel, conv: &Conversation, remote: bool, created: bool) -> ConversationInfo {
    let settings = conv.settings();
    let max_mode = kernel
        .catalog
        .harness(Some(&settings.harness))
        .map(|h| kernel.catalog.ceiling(h, settings.mode_ceiling, remote).as_str().to_string())
        .unwrap_or_else(|_| settings.mode.clone());
    ConversationInfo {
        conversation_id: conv.id,
        harness: settings.harness,
        model: settings.model,
        mode: settings.mode,
        max_mode,
        effort: settings.effort,
        rules_files: crate::features::rules::paths(settings.workspace.as_deref()),
        workspace: settings.workspace,
        title: kernel.store.conversation(conv.id).ok().flatten().and_then(|r| r.title),
        parent_id: conv.row.parent_id,
        created_at_ms: conv.row.created_at_ms,
        status: if conv.is_running() { "running".into() } else { "idle".into() },
        head_seq: conv.head_seq(),
        created,
        cost_usd: {
            let spend = lock(&conv.spend);
            if spend.loaded { spend.total } else { crate::spend::stored_total(&*kernel.store, conv.id) }
        },
    }
}

/// The conversations among these that have a turn running on another kernel (none on a store
/// only this kernel uses: every running turn is live here).
pub(super) fn running_elsewhere(kernel: &Kernel, ids: &[i64]) -> std::collections::HashSet<i64> {
    if !kernel.store.shared() {
        return Default::default();
    }
    kernel.store.running(ids).map(|ids| ids.into_iter().collect()).unwrap_or_else(|err| {
        tracing::warn!("reading which conversations run a turn: {err}");
        Default::default()
    })
}

/// The rules files of each workspace met so far: a list names the same few workspaces over and
/// over, and finding a workspace's rules reads them.
#[derive(Default)]
pub(super) struct RulesFiles(std::collections::HashMap<Option<String>, Vec<String>>);

impl RulesFiles {
    fn of(&mut self, workspace: Option<&str>) -> Vec<String> {
        let key = workspace.map(str::to_string);
        self.0.entry(key).or_insert_with(|| crate::features::rules::paths(workspace)).clone()
    }
}

/// What a stored conversation's info says of its events: read with a list's page, or alone.
pub(super) struct RowEvents {
    head_seq: u64,
    cost_usd: Option<f64>,
}

impl RowEvents {
    fn read(kernel: &Kernel, id: i64) -> Result<Self, ErrorObject> {
        let head_seq = kernel.store.head_seq(id).map_err(internal)?;
        Ok(RowEvents { head_seq, cost_usd: crate::spend::stored_total(&*kernel.store, id) })
    }

    fn listed(listed: &superpi_store::Listed) -> Self {
        let cost_usd = listed.last_usage.as_deref().and_then(crate::spend::total_in);
        RowEvents { head_seq: listed.head_seq, cost_usd }
    }
}

/// The info of a stored conversation, without making it live when it is not; `running` when
/// another kernel runs a turn of it.
pub(super) fn row_info(
    kernel: &Arc<Kernel>,
    row: &ConversationRow,
    remote: bool,
    running: bool,
    events: RowEvents,
    rules_files: &mut RulesFiles,
) -> Result<ConversationInfo, ErrorObject> {
    if let Some(conv) = kernel.live.get(row.id) {
        return Ok(info(kernel, &conv, remote, false));
    }
    let kept = row.settings.mode_ceiling.as_deref().and_then(|m| m.parse().ok());
    let harness = kernel.catalog.harness(Some(&row.harness));
    let max_mode = harness
        .as_ref()
        .map(|h| kernel.catalog.ceiling(h, kept, remote).as_str().to_string())
        .unwrap_or_else(|_| row.mode.clone());
    // A managed workspace's path, which a scratch one's row does not hold (its id names it).
    let managed = harness.ok().and_then(|h| listed(kernel.catalog.workspaces_root(), &h.workspace, row.id));
    let workspace = managed.or_else(|| row.workspace.clone());
    Ok(ConversationInfo {
        conversation_id: row.id,
        harness: row.harness.clone(),
        model: row.model.clone(),
        mode: row.mode.clone(),
        max_mode,
        effort: row.settings.effort,
        rules_files: rules_files.of(workspace.as_deref()),
        workspace,
        title: row.title.clone(),
        parent_id: row.parent_id,
        created_at_ms: row.created_at_ms,
        status: if running { "running".into() } else { "idle".into() },
        head_seq: events.head_seq,
        created: false,
        cost_usd: events.cost_usd,
    })
}

pub(super) fn open(kernel: &Arc<Kernel>, peer: &Peer, p: OpenParams) -> Reply {
    let attached = attached_servers(peer, &p.mcp_servers)?;
    let existing = match (p.conversation_id, &p.external_id) {
        (Some(id), _) => Some(id),
        (None, Some(external)) => {
            kernel.store.find_external(&peer.frontend, &peer.principal, external).map_err(internal)?
        }
        (None, None) => None,
    };
    let extra_dirs = match &p.extra_dirs {
        Some(dirs) => Some(dirs.iter().map(|dir| extra_dir(kernel, dir)).collect::<Result<Vec<_>, _>>()?),
        None => None,
    };
    let system_prompt = p.system_prompt.as_deref().map(str::trim).map(str::to_string);
    if let Some(id) = existing {
        let found = found(kernel, peer, id)?;
        match &found {
            Found::Here(conv) => attach_servers(conv, attached),
            Found::Elsewhere { holder, .. } if attached.is_some() => return Err(attach_elsewhere(id, holder)),
            Found::Elsewhere { .. } => {}
        }
        if extra_dirs.is_some() || system_prompt.is_some() {
            set_session_settings(kernel, peer, &found, extra_dirs, system_prompt)?;
        }
        return to_value(found_info(kernel, &found, peer.remote)?);
    }
    if p.create == Some(false) {
        let what = p.external_id.as_deref().unwrap_or("(none given)");
        return Err(ErrorObject::new(codes::NOT_FOUND, format!("no conversation for session {what}")));
    }
    let harness = kernel.catalog.harness(p.harness.as_deref())?;
    // The harness's model (the first of its cascade) when the caller names none.
    let (model, _) = match (&p.model, harness.cost.models.first()) {
        (Some(model), _) | (None, Some(model)) => (model.clone(), false),
        (None, None) => kernel.catalog.default_model(),
    };
    kernel.catalog.provider(&model)?;
    if let Some(effort) = p.effort {
        kernel.catalog.check_effort(Some(harness), &model, effort)?;
    }
    let mode = kernel.catalog.mode_for(p.mode.as_deref(), harness, peer.remote)?;
    // A harness whose workspace the kernel manages decides it: the caller's is ignored.
    let workspace = match harness.workspace {
        superpi_policy::WorkspaceKind::Repo => Some(workspace_root(p.workspace.as_deref())?),
        _ => stored(&kernel.config.workspaces_dir, &harness.workspace)
            .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, format!("making its workspace: {e}")))?,
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
            settings: ConversationSettings {
                effort: p.effort,
                extra_dirs: extra_dirs.unwrap_or_default(),
                system_prompt: system_prompt.filter(|s| !s.is_empty()),
                tool_limit: None,
                mode_ceiling: None,
            },
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

/// `session.open`'s `mcp_servers`, checked: `None` when none are given. Only a local peer (an
/// editor's frontend, whose protocol carries its servers) may attach them: each is a command
/// the kernel's user runs, which a remote principal (a token over rpc or the gateway) must not
/// name.
pub(super) fn attached_servers(
    peer: &Peer,
    servers: &[superpi_proto::method::McpServerParam],
) -> Result<AttachedServers, ErrorObject> {
    if servers.is_empty() {
        return Ok(None);
    }
    // The kernel's own user only (an editor over ACP is; a token's principal over rpc or the
    // gateway is not): each server is a command run as that user.
    if peer.principal != superpi_proto::message::LOCAL_PRINCIPAL {
        return Err(ErrorObject::new(
            codes::FORBIDDEN,
            format!(
                "mcp_servers: a remote caller ({} through {}) may not attach MCP servers: each is a command run \
                 as the kernel's user. Name them in settings.json (`superpi mcp add`), or attach them from a \
                 local frontend (an editor over ACP)",
                peer.principal, peer.frontend
            ),
        ));
    }
    let mut attached = std::collections::BTreeMap::new();
    for server in servers {
        let invalid =
            |why: &str| ErrorObject::new(codes::INVALID_PARAMS, format!("mcp_servers: `{}` {why}", server.name));
        let has_command = !server.command.trim().is_empty();
        if !superpi_policy::mcp_servers::valid_server_name(&server.name) || has_command == server.url.is_some() {
            return Err(invalid(
                "needs a name of 1 to 32 of a-z, A-Z, 0-9, `_` and `-` (no `__`) and either a command or a url",
            ));
        }
        let config = match &server.url {
            // Headers pass through as given: no `${VAR}` of the kernel's is read into them.
            Some(url) => {
                if superpi_policy::net::url_host(url).is_none() {
                    return Err(invalid("has a url that is not http(s)"));
                }
                let headers: std::collections::BTreeMap<String, String> =
                    server.headers.iter().map(|(k, v)| (k.clone(), v.replace('$', "$$"))).collect();
                superpi_policy::McpServerConfig::http(url.clone(), headers, server.sse)
            }
            None => {
                superpi_policy::McpServerConfig::stdio(server.command.clone(), server.args.clone(), server.env.clone())
            }
        };
        attached.insert(server.name.clone(), config);
    }
    Ok(Some(attached))
}

pub(super) fn attach_servers(conv: &Conversation, attached: AttachedServers) {
    if let Some(servers) = attached {
        *lock(&conv.mcp_servers) = servers;
    }
}

/// A directory a conversation's tools may write besides its workspace: an existing absolute
/// directory the sandbox would take as a workspace (not `/`, the home directory's parents or
/// superpi's own directories), stored canonical.
fn extra_dir(kernel: &Kernel, dir: &str) -> Result<String, ErrorObject> {
    let canonical = workspace_root(Some(dir))?;
    let own: Vec<&std::path::Path> = kernel.catalog.private_dirs().iter().map(|d| d.as_path()).collect();
    superpi_sandbox::check_workspace(std::path::Path::new(&canonical), &own)
        .map_err(|why| ErrorObject::new(codes::INVALID_PARAMS, format!("extra_dirs: {dir}: {why}")))?;
    Ok(canonical)
}

/// `session.open`'s `extra_dirs` and `system_prompt` for a conversation that exists: stored,
/// and applied from its next turn (by the kernel that runs it, when another does).
fn set_session_settings(
    kernel: &Arc<Kernel>,
    peer: &Peer,
    found: &Found,
    extra_dirs: Option<Vec<String>>,
    system_prompt: Option<String>,
) -> Result<(), ErrorObject> {
    let id = match found {
        Found::Here(conv) => conv.id,
        Found::Elsewhere { row, .. } => row.id,
    };
    let held = match found {
        Found::Here(conv) => Some(lock(&conv.settings)),
        Found::Elsewhere { .. } => None,
    };
    let mut stored = kernel.store.conversation(id).map_err(internal)?.ok_or_else(|| not_found(id))?.settings;
    if let Some(dirs) = &extra_dirs {
        stored.extra_dirs = dirs.clone();
    }
    if let Some(prompt) = &system_prompt {
        stored.system_prompt = Some(prompt.clone()).filter(|p| !p.is_empty());
    }
    kernel.store.set_settings(id, &stored).map_err(internal)?;
    match held {
        Some(mut held) => {
            held.extra_dirs = stored.extra_dirs;
            held.system_prompt = stored.system_prompt;
        }
        None => super::settings::settings_changed(kernel, peer, id)?,
    }
    Ok(())
}

/// `session.delete`: the conversation and everything stored of it, once no turn of it runs.
pub(super) fn delete(kernel: &Arc<Kernel>, peer: &Peer, id: i64) -> Reply {
    match found(kernel, peer, id)? {
        Found::Here(conv) => {
            if conv.is_running() {
                return Err(ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!("conversation {id} is running a turn: cancel it (session.cancel) before deleting it"),
                ));
            }
            conv.retire();
            kernel.live.remove(&conv);
        }
        Found::Elsewhere { holder, .. } => {
            return Err(ErrorObject::new(
                codes::RUN_ELSEWHERE,
                format!(
                    "conversation {id} is run by kernel {holder}: delete it through that kernel, or once it is idle there"
                ),
            ));
        }
    }
    let deleted = kernel.store.delete_conversation(id).map_err(internal)?;
    if !deleted {
        return Err(not_found(id));
    }
    crate::tools::artifact::remove_all(&kernel.config.data_dir, id);
    crate::features::workspaces::remove_scratch(&kernel.config.workspaces_dir, id);
    tracing::info!(conversation = id, "conversation deleted");
    Ok(json!({"deleted": true}))
}

/// A workspace must be an existing absolute directory; it is stored canonical.
pub(super) fn workspace_root(requested: Option<&str>) -> Result<String, ErrorObject> {
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

pub(super) async fn submit(kernel: &Arc<Kernel>, peer: &Peer, p: SubmitParams) -> Reply {
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
    crate::features::commands::expand_called(&kernel.catalog.config_dir, workspace.as_deref(), &mut content);
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
    crate::turn::client_tools::check(&p.client_tools).map_err(|why| ErrorObject::new(codes::INVALID_PARAMS, why))?;
    if let Some(schema) = &p.output_schema {
        crate::turn::structured::Structured::new(schema.clone())
            .map_err(|why| ErrorObject::new(codes::INVALID_PARAMS, why))?;
        if p.steer {
            let why = "output_schema: not with `steer` (a steering prompt joins a turn that has its own answer)";
            return Err(ErrorObject::new(codes::INVALID_PARAMS, why));
        }
    }
    let conv = match found {
        Found::Here(conv) => conv,
        Found::Elsewhere { .. } if p.output_schema.is_some() => {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                "output_schema: the conversation runs on another kernel; submit through that one",
            ));
        }
        Found::Elsewhere { .. } if !p.client_tools.is_empty() => {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                "client_tools: the conversation runs on another kernel; submit through that one",
            ));
        }
        Found::Elsewhere { row, .. } => return forward_submit(kernel, peer, &row, &message, p.steer),
    };
    // The turn runs at most in the submitter's ceiling: a remote caller's stays the remote
    // one even in a conversation the terminal left in `auto`.
    let settings = conv.settings();
    let harness = kernel.catalog.harness(Some(&settings.harness))?;
    let ceiling = kernel.catalog.max_mode(harness, peer.remote);
    // Never above the ceiling a hand-off kept.
    let ceiling = settings.mode_ceiling.map_or(ceiling, |kept| ceiling.min(kept));
    let queued = conv.is_running();
    // Acknowledged means stored: the turn and its prompt are written before the answer.
    let turn_id = kernel.store.create_turn(conv.id, &message).map_err(internal)?;
    if !p.client_tools.is_empty() {
        lock(&conv.client_tools).insert(turn_id, p.client_tools);
    }
    if let Some(schema) = p.output_schema {
        lock(&conv.output_schemas).insert(turn_id, schema);
    }
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
pub(super) fn forward_submit(
    kernel: &Arc<Kernel>,
    peer: &Peer,
    row: &ConversationRow,
    message: &Message,
    steer: bool,
) -> Reply {
    let harness = kernel.catalog.harness(Some(&row.harness))?;
    let ceiling = kernel.catalog.max_mode(harness, peer.remote);
    let kept = row.settings.mode_ceiling.as_deref().and_then(|m| m.parse::<superpi_policy::Mode>().ok());
    let ceiling = kept.map_or(ceiling, |kept| ceiling.min(kept));
    let turn_id = kernel.store.queue_submit(row.id, message, ceiling.as_str(), steer).map_err(internal)?;
    // Its kernel may have let it go meanwhile: then this one takes it over, prompt and all.
    if let Err(err) = live::find(kernel, row.id) {
        tracing::warn!(conversation = row.id, "after queueing a prompt for another kernel: {err}");
    }
    to_value(SubmitResult { turn_id, queued: true, steered: false })
}

pub(super) fn watch(kernel: &Arc<Kernel>, peer: &Arc<Peer>, p: WatchParams) -> Handled {
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
        opens_urls: p.opens_urls,
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

pub(super) async fn cancel(kernel: &Arc<Kernel>, peer: &Peer, id: i64) -> Reply {
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

pub(super) fn list(kernel: &Arc<Kernel>, peer: &Peer, p: ListParams) -> Reply {
    let limit = p.limit.unwrap_or(100).clamp(1, LIST_PAGE);
    let from = match (&p.cursor, p.offset) {
        (None, offset) => ListFrom::Offset(offset.unwrap_or(0)),
        (Some(cursor), None) => list_position(cursor).ok_or_else(|| {
            ErrorObject::new(codes::INVALID_PARAMS, format!("`cursor` {cursor:?} is not a page's `next`"))
        })?,
        (Some(_), Some(_)) => {
            return Err(ErrorObject::new(codes::INVALID_PARAMS, "`cursor` and `offset` do not go together"));
        }
    };
    // One more than the page tells whether another follows.
    let mut rows = kernel.store.list_conversations(&peer.principal, limit + 1, from).map_err(internal)?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = more.then(|| rows.last().map(|last| format!("{}.{}", last.updated_at_ms, last.row.id))).flatten();
    let ids: Vec<i64> = rows.iter().map(|l| l.row.id).filter(|id| kernel.live.get(*id).is_none()).collect();
    let running = running_elsewhere(kernel, &ids);
    let mut rules_files = RulesFiles::default();
    let conversations = rows
        .iter()
        .map(|l| {
            let running = running.contains(&l.row.id);
            row_info(kernel, &l.row, peer.remote, running, RowEvents::listed(l), &mut rules_files)
        })
        .collect::<Result<Vec<_>, _>>()?;
    to_value(ListResult { conversations, more, next })
}

/// The position a `session.list` cursor names: `UPDATED_AT_MS.ID` of the page's last row.
fn list_position(cursor: &str) -> Option<ListFrom> {
    let (updated_at_ms, id) = cursor.split_once('.')?;
    Some(ListFrom::After { updated_at_ms: updated_at_ms.parse().ok()?, id: id.parse().ok()? })
}

pub(super) fn history(kernel: &Arc<Kernel>, peer: &Peer, p: HistoryParams) -> Reply {
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

pub(super) fn fork(kernel: &Arc<Kernel>, peer: &Peer, p: ForkParams) -> Reply {
    // Wherever the source runs, the fork reads it from the store and runs here.
    found(kernel, peer, p.conversation_id)?;
    let id = p.conversation_id;
    let row = kernel.store.conversation(id).map_err(internal)?.ok_or_else(|| not_found(id))?;
    let forked = kernel.store.fork(&row, &peer.principal, p.at_seq).map_err(internal)?;
    if let Some(fork) = live::conversation(kernel, forked.id).map_err(internal)? {
        crate::turn::recovery::close_forked(kernel, &fork).map_err(internal)?;
    }
    let events = RowEvents::read(kernel, forked.id)?;
    let mut value = row_info(kernel, &forked, peer.remote, false, events, &mut RulesFiles::default())?;
    value.created = true;
    to_value(value)
}

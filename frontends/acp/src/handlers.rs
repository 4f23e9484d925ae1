//! The ACP methods that reach the kernel, each run in a task of its own so the dispatch loop
//! never waits on the kernel.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AvailableCommandsUpdate, CloseSessionRequest, CloseSessionResponse, ConfigOptionUpdate, ContentBlock, ContentChunk,
    CurrentModeUpdate, DeleteSessionRequest, DeleteSessionResponse, ListSessionsRequest, ListSessionsResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, SessionConfigOptionValue, SessionId,
    SessionInfoUpdate, SessionModeId, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason, TextContent,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use superpi_client::{ClientError, KernelClient};
use superpi_proto::ContentBlock as KBlock;
use superpi_proto::message::codes;
use superpi_proto::method::{ListParams, Method, OpenParams, SetModelParams, SubmitParams};

use superpi_client::sync::lock;

use crate::agent::Server;
use crate::replay::Replay;
use crate::request;
use crate::session::{FAIL_CLOSED_OPTION, PromptGuard, Session};
use crate::wire::{ForkSessionRequest, ForkSessionResponse, SteeringRequest, SteeringResponse};

/// Like [`spawn_answer`], for requests that set up a session: once answered, the editor is
/// told the session's slash commands.
pub(crate) fn spawn_session_answer<T, F>(
    server: Arc<Server>,
    responder: Responder<T>,
    cx: ConnectionTo<Client>,
    work: F,
    id_of: impl FnOnce(&T) -> SessionId + Send + 'static,
) where
    T: agent_client_protocol::JsonRpcResponse + Send + 'static,
    F: std::future::Future<Output = Result<T, Error>> + Send + 'static,
{
    tokio::spawn(async move {
        let result = work.await;
        let id = result.as_ref().ok().map(id_of);
        if let Err(err) = responder.respond_with_result(result) {
            tracing::debug!("could not answer: {err:?}");
        }
        if let Some(id) = id {
            announce_commands(&server, &cx, &id).await;
        }
    });
}

/// Spawns `work` and answers the request with its result: the dispatch loop never waits.
pub(crate) fn spawn_answer<T, F>(responder: Responder<T>, work: F)
where
    T: agent_client_protocol::JsonRpcResponse + Send + 'static,
    F: std::future::Future<Output = Result<T, Error>> + Send + 'static,
{
    tokio::spawn(async move {
        let result = work.await;
        if let Err(err) = &result {
            tracing::debug!("request failed: {err:?}");
        }
        if let Err(err) = responder.respond_with_result(result) {
            tracing::debug!("could not answer: {err:?}");
        }
    });
}

pub(crate) async fn new_session(server: Arc<Server>, req: NewSessionRequest) -> Result<NewSessionResponse, Error> {
    let workspace = request::new_workspace(&req.cwd, &server.connect.locations)?;
    let mcp_servers = request::mcp_servers(&req.mcp_servers, server.opts.editor_mcp)?;
    let harness = request::harness(req.meta.as_ref())?;
    let extra_dirs = request::extra_dirs(&req.additional_directories, &server.connect.locations)?;
    let system_prompt = request::system_prompt(req.system_prompt.as_ref())?;
    let kernel = server.kernel().await?;
    let open = OpenParams {
        harness: Some(harness),
        workspace: Some(workspace),
        mcp_servers,
        extra_dirs: Some(extra_dirs).filter(|d| !d.is_empty()),
        system_prompt,
        ..Default::default()
    };
    let info = kernel.open(open).await.map_err(|e| request::kernel_error(e, None))?;
    let session = server.add_session(&kernel, &info).await;
    tracing::info!(session = %session.id.0, harness = %info.harness, "session created");
    Ok(NewSessionResponse::new(session.id.clone())
        .modes(request::modes(&info.mode, &info.max_mode))
        .config_options(server.config_options(&kernel, &session).await))
}

/// What session/load and session/resume set up besides the session: the editor's MCP
/// servers, additional directories (the complete list: none when empty) and system prompt.
pub(crate) struct Setup<'a> {
    pub mcp: &'a [agent_client_protocol::v1::schema::McpServer],
    pub additional_directories: &'a [std::path::PathBuf],
    pub system_prompt: Option<&'a agent_client_protocol::v1::schema::SystemPrompt>,
}

/// Attaches a stored conversation (load and resume); with `cx` its history is replayed
/// first.
pub(crate) async fn attach(
    server: &Arc<Server>,
    id: &SessionId,
    setup: Setup<'_>,
    replay_to: Option<&ConnectionTo<Client>>,
) -> Result<(Arc<Session>, KernelClient), Error> {
    let conv = request::conversation_id(id)?;
    let mcp_servers = request::mcp_servers(setup.mcp, server.opts.editor_mcp)?;
    let extra_dirs = request::extra_dirs(setup.additional_directories, &server.connect.locations)?;
    let system_prompt = request::system_prompt(setup.system_prompt)?;
    let kernel = server.kernel().await?;
    // The stored list of directories is replaced (by none when the editor gives none).
    let open = OpenParams {
        conversation_id: Some(conv),
        mcp_servers,
        create: Some(false),
        extra_dirs: Some(extra_dirs),
        system_prompt,
        ..Default::default()
    };
    kernel.open(open).await.map_err(|e| request::kernel_error(e, Some(id)))?;
    let mut pages = kernel.history_pages(conv).await.map_err(|e| request::kernel_error(e, Some(id)))?;
    let session = server.add_session(&kernel, pages.conversation()).await;
    if let Some(cx) = replay_to {
        // Page by page: what is held is one page and the calls still waiting for a result.
        let mut replay = Replay::new(pages.last_plan(), session.workspace.as_deref(), session.tools());
        // The title the first prompt gives, once it is seen.
        let mut prompt_title: Option<Option<String>> = None;
        while let Some(page) = pages.next_page().await.map_err(|e| request::kernel_error(e, Some(id)))? {
            if prompt_title.is_none()
                && let Some(first) = page.iter().find(|e| e.kind == superpi_proto::EntryKind::User)
            {
                prompt_title = Some(request::title_from_prompt(&first.message.content));
            }
            for update in page.iter().flat_map(|entry| replay.push(entry)) {
                cx.send_notification(SessionNotification::new(session.id.clone(), update))?;
            }
        }
        for update in replay.finish() {
            cx.send_notification(SessionNotification::new(session.id.clone(), update))?;
        }
        // The stored title, else one from the first prompt (as a new session gets).
        let title = pages.conversation().title.clone().or(prompt_title.flatten());
        if let Some(title) = title {
            session.set_titled();
            let info = SessionInfoUpdate::new().title(title);
            cx.send_notification(SessionNotification::new(session.id.clone(), SessionUpdate::SessionInfoUpdate(info)))?;
        }
    }
    Ok((session, kernel))
}

/// A prompt claimed in the dispatch loop: its session, content and claim, and whether another
/// prompt of the session was running (then it steers that prompt's turn).
pub(crate) struct Started {
    pub session: Arc<Session>,
    pub content: Vec<KBlock>,
    pub guard: PromptGuard,
    pub steers: bool,
}

/// The synchronous half of session/prompt, run in the dispatch loop so that a
/// session/cancel that follows finds the prompt claimed.
pub(crate) fn start_prompt(server: &Server, req: &PromptRequest) -> Result<Started, Error> {
    let session = server.session(&req.session_id)?;
    let content = request::prompt(&req.prompt)?;
    let (guard, steers) = session.begin_prompt();
    Ok(Started { session, content, guard, steers })
}

/// session/prompt. One sent while another of the session runs steers that prompt's turn (the
/// ACP prompt-queueing practice): it joins the turn before its next model request, the
/// earlier prompt then answers `end_turn`, and this one answers when the turn ends. A prompt
/// no turn can take any more runs as the next turn.
pub(crate) async fn prompt(
    server: Arc<Server>,
    started: Started,
    cx: ConnectionTo<Client>,
) -> Result<PromptResponse, Error> {
    let Started { session, content, guard, steers } = started;
    let kernel = server.kernel().await?;
    if let Some(command) = request::command(&content) {
        return run_command(&server, &kernel, &session, command, &cx).await;
    }
    session.ensure_pump(&kernel, &cx).await.map_err(|e| request::kernel_error(e, Some(&session.id)))?;
    if session.needs_title()
        && let Some(title) = request::title_from_prompt(&content)
    {
        let update = SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title(title));
        cx.send_notification(SessionNotification::new(session.id.clone(), update))?;
    }
    let submitted = kernel
        .submit(SubmitParams { conversation_id: session.conversation_id, content, steer: steers, ..Default::default() })
        .await
        .map_err(|e| request::kernel_error(e, Some(&session.id)))?;
    let ended = session.wait_turn(submitted.turn_id);
    if session.cancel_requested() {
        // The cancel came before the turn existed: cancel it now.
        let _ = kernel.cancel(session.conversation_id).await;
    }
    let stop = ended.await.unwrap_or(StopReason::Refusal);
    drop(guard);
    Ok(PromptResponse::new(stop))
}

/// A slash command, answered by the agent itself as a short turn of its own.
pub(crate) async fn run_command(
    server: &Server,
    kernel: &KernelClient,
    session: &Session,
    command: request::Command,
    cx: &ConnectionTo<Client>,
) -> Result<PromptResponse, Error> {
    let say = |text: String| {
        let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
        cx.send_notification(SessionNotification::new(session.id.clone(), SessionUpdate::AgentMessageChunk(chunk)))
    };
    let settings = session.settings().ok_or_else(|| request::not_found(&session.id))?;
    match command {
        request::Command::Status => {
            // The rules files as the kernel reads them now (an AGENTS.md may have appeared).
            let open = OpenParams { conversation_id: Some(session.conversation_id), ..OpenParams::default() };
            let info = kernel.open(open).await.map_err(|e| request::kernel_error(e, Some(&session.id)))?;
            let rules = match info.rules_files.as_slice() {
                [] => "no AGENTS.md read".to_string(),
                files => format!("rules read from {}", files.join(", ")),
            };
            say(format!(
                "Session {} (conversation {}): harness {}, model {}, mode {} (ceiling {}); {rules}.",
                session.id.0,
                session.conversation_id,
                settings.harness,
                settings.model,
                settings.mode,
                settings.max_mode
            ))?
        }
        request::Command::Mode(mode) => match request::mode(&SessionModeId::new(mode), &settings.max_mode) {
            Err(err) => say(format!("Mode unchanged: {}.", err.message))?,
            Ok(mode) => {
                kernel
                    .set_mode(session.conversation_id, &mode)
                    .await
                    .map_err(|e| request::kernel_error(e, Some(&session.id)))?;
                session.update_settings(|s| s.mode = mode.clone());
                let update = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(SessionModeId::new(mode.clone())));
                cx.send_notification(SessionNotification::new(session.id.clone(), update))?;
                // Editors that show only config options see the change there.
                let options = server.config_options(kernel, session).await;
                let update = SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options));
                cx.send_notification(SessionNotification::new(session.id.clone(), update))?;
                say(format!("Mode: {mode}."))?;
            }
        },
        request::Command::Compact => {
            let done = kernel
                .compact(session.conversation_id)
                .await
                .map_err(|e| request::kernel_error(e, Some(&session.id)))?;
            if done["compacted"] == true {
                say(format!(
                    "Context compacted: about {} tokens before, {} after, of a {}-token window.",
                    done["tokens_before"], done["tokens_after"], done["context_window"]
                ))?
            } else {
                say(format!("Nothing compacted: {}.", done["reason"].as_str().unwrap_or("nothing to summarise yet")))?
            }
        }
        request::Command::Clear => {
            kernel.clear(session.conversation_id).await.map_err(|e| request::kernel_error(e, Some(&session.id)))?;
            say("Context cleared: the model starts afresh; the session's history keeps every turn.".to_string())?
        }
        request::Command::Undo => match kernel.undo(session.conversation_id, None).await {
            Ok(done) => say(format!("{done}."))?,
            // Nothing to undo, a running turn, a file changed since: said, like a compaction's "nothing".
            Err(ClientError::Kernel(e)) if e.code == codes::INVALID_PARAMS || e.code == codes::FORBIDDEN => {
                say(format!("Nothing undone: {}.", e.message))?
            }
            Err(e) => return Err(request::kernel_error(e, Some(&session.id))),
        },
    }
    Ok(PromptResponse::new(StopReason::EndTurn))
}

/// Tells the editor the slash commands of a session (after the session's response): the
/// agent's own, then the user-defined ones of the config dir and the session's workspace
/// (`command.list`; the kernel expands them when a prompt calls one).
pub(crate) async fn announce_commands(server: &Server, cx: &ConnectionTo<Client>, session: &SessionId) {
    let user = match (server.kernel().await, request::conversation_id(session)) {
        (Ok(kernel), Ok(conv)) => kernel.commands(Some(conv)).await.unwrap_or_else(|err| {
            tracing::warn!("command.list: {err}");
            Vec::new()
        }),
        _ => Vec::new(),
    };
    let commands = request::commands_with(&user);
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
    let _ = cx.send_notification(SessionNotification::new(session.clone(), update));
}

/// session/cancel: open questions are withdrawn and answered (fail closed) first, then the
/// turn is cancelled; the pending prompt answers `cancelled` when the turn ends.
pub(crate) async fn cancel(
    server: Arc<Server>,
    session: Arc<Session>,
    running: bool,
    questions: Vec<(String, agent_client_protocol::RequestCancellationHandle)>,
) -> Result<(), Error> {
    let kernel = server.kernel().await?;
    for (request_id, handle) in questions {
        let _ = handle.cancel();
        if let Err(err) = kernel.respond_permission(&request_id, FAIL_CLOSED_OPTION).await {
            tracing::debug!(request_id, "permission.respond on cancel: {err}");
        }
    }
    if running && let Err(err) = kernel.cancel(session.conversation_id).await {
        tracing::debug!("session.cancel: {err}");
    }
    Ok(())
}

pub(crate) async fn set_mode(server: Arc<Server>, req: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
    let session = server.session(&req.session_id)?;
    let settings = session.settings().ok_or_else(|| request::not_found(&req.session_id))?;
    let mode = request::mode(&req.mode_id, &settings.max_mode)?;
    let kernel = server.kernel().await?;
    kernel.set_mode(session.conversation_id, &mode).await.map_err(|e| request::kernel_error(e, Some(&session.id)))?;
    session.update_settings(|s| s.mode = mode);
    Ok(SetSessionModeResponse::new())
}

pub(crate) async fn set_config_option(
    server: Arc<Server>,
    req: SetSessionConfigOptionRequest,
) -> Result<SetSessionConfigOptionResponse, Error> {
    let session = server.session(&req.session_id)?;
    let SessionConfigOptionValue::ValueId { value } = &req.value else {
        return Err(request::invalid_params(format!("the option `{}` takes a value id", req.config_id.0)));
    };
    match &*req.config_id.0 {
        request::MODEL_CONFIG_ID => {}
        request::EFFORT_CONFIG_ID => {
            let effort = request::effort_choice(&value.0)?;
            let kernel = server.kernel().await?;
            kernel
                .set_effort(session.conversation_id, effort)
                .await
                .map_err(|e| request::kernel_error(e, Some(&session.id)))?;
            session.update_settings(|s| s.effort = effort);
            return Ok(SetSessionConfigOptionResponse::new(server.config_options(&kernel, &session).await));
        }
        request::MODE_CONFIG_ID => {
            set_mode(server.clone(), SetSessionModeRequest::new(req.session_id.clone(), value.0.to_string())).await?;
            let kernel = server.kernel().await?;
            return Ok(SetSessionConfigOptionResponse::new(server.config_options(&kernel, &session).await));
        }
        other => return Err(request::invalid_params(format!("unknown config option `{other}`"))),
    }
    let model = value.0.to_string();
    let kernel = server.kernel().await?;
    let params = SetModelParams { conversation_id: session.conversation_id, model: model.clone() };
    match kernel.request::<serde_json::Value>(Method::SessionSetModel(params)).await {
        Ok(_) => session.update_settings(|s| s.model = model),
        Err(ClientError::Kernel(e)) if e.code == codes::PROVIDER => {
            return Err(request::invalid_params(format!("cannot switch to model `{model}`: {}", e.message)));
        }
        Err(e) => return Err(request::kernel_error(e, Some(&session.id))),
    }
    Ok(SetSessionConfigOptionResponse::new(server.config_options(&kernel, &session).await))
}

pub(crate) async fn list(server: Arc<Server>, req: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
    let kernel = server.kernel().await?;
    // A page of the kernel's list (its `next` is the session list's cursor); the `cwd` filter
    // applies to the page, so a page may hold fewer sessions while more follow.
    let params = ListParams { cursor: req.cursor.clone(), ..Default::default() };
    let page = kernel.list_page(params).await.map_err(|e| match e {
        ClientError::Kernel(e) if e.code == codes::INVALID_PARAMS => request::invalid_params(e.message),
        e => request::kernel_error(e, None),
    })?;
    let cwd = req.cwd.as_ref().and_then(|c| c.to_str()).map(str::to_string);
    let sessions =
        page.conversations.iter().filter(|c| cwd.is_none() || c.workspace == cwd).map(request::session_info).collect();
    Ok(ListSessionsResponse::new(sessions).next_cursor(page.next))
}

pub(crate) async fn close(server: Arc<Server>, req: CloseSessionRequest) -> Result<CloseSessionResponse, Error> {
    let session = server.session(&req.session_id)?;
    lock(&server.sessions).remove(&session.conversation_id);
    let running = session.prompt_running();
    let questions = session.stop();
    if running || !questions.is_empty() {
        let kernel = server.kernel().await?;
        for (request_id, handle) in questions {
            let _ = handle.cancel();
            let _ = kernel.respond_permission(&request_id, FAIL_CLOSED_OPTION).await;
        }
        if running {
            let _ = kernel.cancel(session.conversation_id).await;
        }
    }
    Ok(CloseSessionResponse::new())
}

/// session/delete: the conversation and all stored of it. An open session of it is closed
/// first (its questions withdrawn); one whose prompt runs is refused: cancel it first.
pub(crate) async fn delete(server: Arc<Server>, req: DeleteSessionRequest) -> Result<DeleteSessionResponse, Error> {
    let conv = request::conversation_id(&req.session_id)?;
    let open = lock(&server.sessions).get(&conv).cloned();
    if let Some(session) = open {
        if session.prompt_running() {
            return Err(request::invalid_params("a prompt of this session is running: cancel it before deleting it"));
        }
        close(server.clone(), CloseSessionRequest::new(req.session_id.clone())).await?;
    }
    let kernel = server.kernel().await?;
    kernel.delete(conv).await.map_err(|e| request::kernel_error(e, Some(&req.session_id)))?;
    tracing::info!(session = %req.session_id.0, "session deleted");
    Ok(DeleteSessionResponse::new())
}

pub(crate) async fn fork(server: Arc<Server>, req: ForkSessionRequest) -> Result<ForkSessionResponse, Error> {
    let session = server.session(&req.session_id)?;
    let kernel = server.kernel().await?;
    let info =
        kernel.fork(session.conversation_id, None).await.map_err(|e| request::kernel_error(e, Some(&session.id)))?;
    let forked = server.add_session(&kernel, &info).await;
    Ok(ForkSessionResponse { session_id: forked.id.clone() })
}

/// `_session/steering`: the prompt joins the running turn of the session's running
/// `session/prompt` (the kernel's `session.submit` with `steer`), which keeps waiting for the
/// turn's end. Refused when no prompt of the session runs: there is no turn to steer.
pub(crate) async fn steer(server: Arc<Server>, req: SteeringRequest) -> Result<SteeringResponse, Error> {
    let session = server.session(&req.session_id)?;
    let content = request::prompt(&req.prompt)?;
    if !session.prompt_running() {
        return Err(request::invalid_params("no prompt of this session is running: send session/prompt"));
    }
    let kernel = server.kernel().await?;
    // Counted before the submit: the turn may publish the join before the kernel answers.
    let steering = session.begin_steering();
    let params = SubmitParams { conversation_id: session.conversation_id, content, steer: true, ..Default::default() };
    let submitted = kernel.submit(params).await.map_err(|e| request::kernel_error(e, Some(&session.id)))?;
    if submitted.steered {
        steering.joins();
    }
    Ok(SteeringResponse { steered: submitted.steered })
}

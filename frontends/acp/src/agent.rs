//! The ACP agent: the SDK's dispatch loop with one handler per ACP method.
//!
//! Handlers return at once. `initialize` answers from static data; everything that touches
//! the kernel runs in a spawned task that owns the request's responder, so the dispatch loop
//! stays free for `session/cancel` and for the editor's answers to permission requests while
//! a turn runs. The kernel is reached lazily (the first session/new, load, list, ...) and
//! again after it restarted.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommandsUpdate, CancelNotification, ClientCapabilities, CloseSessionRequest,
    CloseSessionResponse, ContentBlock, ContentChunk, CurrentModeUpdate, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities, SessionConfigOption,
    SessionConfigOptionValue, SessionId, SessionInfoUpdate, SessionListCapabilities, SessionModeId,
    SessionNotification, SessionResumeCapabilities, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason, TextContent,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, ConnectTo, Error};
use serde::{Deserialize, Serialize};
use superpi_client::{ClientError, ConnectOptions, KernelClient};
use superpi_proto::ContentBlock as KBlock;
use superpi_proto::message::codes;
use superpi_proto::method::{OpenParams, SubmitParams};

use crate::map;
use crate::render::RenderOptions;
use crate::replay::replay;
use crate::session::{FAIL_CLOSED_OPTION, PromptGuard, Session};

/// Settings of the agent that do not come from the editor.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Context window reported in usage updates.
    pub context_window: u64,
}

/// The agent's state, shared by every handler.
pub struct Server {
    connect: ConnectOptions,
    opts: AgentOptions,
    kernel: Mutex<Option<KernelClient>>,
    sessions: Mutex<HashMap<i64, Arc<Session>>>,
    client_caps: Mutex<ClientCapabilities>,
}

/// `_superpi/session/fork`: a new session holding the conversation so far.
#[derive(Debug, Clone, Serialize, Deserialize, agent_client_protocol::JsonRpcRequest)]
#[request(method = "_superpi/session/fork", response = ForkSessionResponse)]
#[serde(rename_all = "camelCase")]
pub struct ForkSessionRequest {
    pub session_id: SessionId,
}

#[derive(Debug, Clone, Serialize, Deserialize, agent_client_protocol::JsonRpcResponse)]
#[serde(rename_all = "camelCase")]
pub struct ForkSessionResponse {
    pub session_id: SessionId,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The answer to `initialize`: static, no kernel needed.
/// The only protocol version this agent speaks is 1: it answers 1 whatever was asked (the
/// client disconnects if it cannot speak it).
pub fn initialize_response() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(false).audio(false).embedded_context(true))
                .mcp_capabilities(McpCapabilities::new().http(false).sse(false))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new()),
                ),
        )
        .agent_info(Implementation::new("superpi", env!("CARGO_PKG_VERSION")).title("superpi".to_string()))
}

impl Server {
    pub fn new(mut connect: ConnectOptions, opts: AgentOptions) -> Arc<Self> {
        connect.frontend = "acp".to_string();
        // An editor is a caller other than the local CLI: the kernel applies the remote
        // mode ceiling (and the harness's) to its sessions.
        connect.remote = true;
        Arc::new(Server {
            connect,
            opts,
            kernel: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            client_caps: Mutex::new(ClientCapabilities::default()),
        })
    }

    /// The kernel connection, made (or made again after the kernel went away) on demand.
    pub async fn kernel(&self) -> Result<KernelClient, Error> {
        if let Some(client) = lock(&self.kernel).as_ref()
            && !client.is_closed()
        {
            return Ok(client.clone());
        }
        // Two requests may race to connect; the later connection wins the slot and the
        // other is dropped (closing its socket), which is harmless.
        let client = KernelClient::connect(&self.connect).await.map_err(|e| map::kernel_error(e, None))?;
        *lock(&self.kernel) = Some(client.clone());
        Ok(client)
    }

    fn session(&self, id: &SessionId) -> Result<Arc<Session>, Error> {
        let conv = map::conversation_id(id)?;
        lock(&self.sessions).get(&conv).cloned().ok_or_else(|| map::not_found(id))
    }

    fn render_options(&self, workspace: Option<PathBuf>) -> RenderOptions {
        let notices = lock(&self.client_caps).session.as_ref().is_some_and(|s| s.notices.is_some());
        RenderOptions { workspace, context_window: self.opts.context_window, notices }
    }

    fn add_session(&self, info: &superpi_proto::method::ConversationInfo) -> Arc<Session> {
        let session = Session::new(info, self.render_options(info.workspace.as_ref().map(PathBuf::from)));
        if let Some(old) = lock(&self.sessions).insert(info.conversation_id, session.clone()) {
            old.stop();
        }
        session
    }

    /// The models the kernel offers, when it can say (`model.list`); else none.
    async fn models(&self, kernel: &KernelClient) -> Vec<String> {
        match kernel.call("model.list", serde_json::json!({})).await {
            Ok(v) => v
                .get("models")
                .and_then(|m| m.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|m| {
                            m.as_str().or_else(|| m.get("id").or_else(|| m.get("name")).and_then(|i| i.as_str()))
                        })
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    async fn config_options(&self, kernel: &KernelClient, session: &Session) -> Vec<SessionConfigOption> {
        let Some(settings) = session.settings() else { return Vec::new() };
        vec![map::model_option(&settings.model, &self.models(kernel).await)]
    }
}

/// Like [`spawn_answer`], for requests that set up a session: once answered, the editor is
/// told the session's slash commands.
fn spawn_session_answer<T, F>(
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
            announce_commands(&cx, &id);
        }
    });
}

/// Spawns `work` and answers the request with its result: the dispatch loop never waits.
fn spawn_answer<T, F>(responder: Responder<T>, work: F)
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

async fn new_session(server: Arc<Server>, req: NewSessionRequest) -> Result<NewSessionResponse, Error> {
    let workspace = map::workspace(&req.cwd)?;
    map::mcp_servers(&req.mcp_servers)?;
    let harness = map::harness(req.meta.as_ref())?;
    let kernel = server.kernel().await?;
    let info = kernel
        .open(OpenParams { harness: Some(harness), workspace: Some(workspace), ..Default::default() })
        .await
        .map_err(|e| map::kernel_error(e, None))?;
    let session = server.add_session(&info);
    tracing::info!(session = %session.id.0, harness = %info.harness, "session created");
    Ok(NewSessionResponse::new(session.id.clone())
        .modes(map::modes(&info.mode, &info.max_mode))
        .config_options(server.config_options(&kernel, &session).await))
}

/// Attaches a stored conversation (load and resume); with `cx` its history is replayed
/// first.
async fn attach(
    server: &Arc<Server>,
    id: &SessionId,
    mcp: &[agent_client_protocol::v1::schema::McpServer],
    replay_to: Option<&ConnectionTo<Client>>,
) -> Result<(Arc<Session>, KernelClient), Error> {
    let conv = map::conversation_id(id)?;
    map::mcp_servers(mcp)?;
    let kernel = server.kernel().await?;
    let history = kernel.history(conv).await.map_err(|e| map::kernel_error(e, Some(id)))?;
    let session = server.add_session(&history.conversation);
    if let Some(cx) = replay_to {
        for update in replay(&history.entries, session.workspace.as_deref()) {
            cx.send_notification(SessionNotification::new(session.id.clone(), update))?;
        }
        if let Some(title) = &history.conversation.title {
            let info = SessionInfoUpdate::new().title(title.clone());
            cx.send_notification(SessionNotification::new(session.id.clone(), SessionUpdate::SessionInfoUpdate(info)))?;
        }
    }
    Ok((session, kernel))
}

/// The synchronous half of session/prompt, run in the dispatch loop so that a
/// session/cancel that follows finds the prompt claimed.
fn start_prompt(server: &Server, req: &PromptRequest) -> Result<(Arc<Session>, Vec<KBlock>, PromptGuard), Error> {
    let session = server.session(&req.session_id)?;
    let content = map::prompt(&req.prompt)?;
    let Some(guard) = session.begin_prompt() else {
        return Err(map::invalid_params("a prompt is already running in this session"));
    };
    Ok((session, content, guard))
}

async fn prompt(
    server: Arc<Server>,
    session: Arc<Session>,
    content: Vec<KBlock>,
    guard: PromptGuard,
    cx: ConnectionTo<Client>,
) -> Result<PromptResponse, Error> {
    let kernel = server.kernel().await?;
    if let Some(command) = map::command(&content) {
        return run_command(&kernel, &session, command, &cx).await;
    }
    session.ensure_pump(&kernel, &cx).await.map_err(|e| map::kernel_error(e, Some(&session.id)))?;
    let submitted = kernel
        .submit(SubmitParams { conversation_id: session.conversation_id, content, prompt: None })
        .await
        .map_err(|e| map::kernel_error(e, Some(&session.id)))?;
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
async fn run_command(
    kernel: &KernelClient,
    session: &Session,
    command: map::Command,
    cx: &ConnectionTo<Client>,
) -> Result<PromptResponse, Error> {
    let say = |text: String| {
        let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
        cx.send_notification(SessionNotification::new(session.id.clone(), SessionUpdate::AgentMessageChunk(chunk)))
    };
    let settings = session.settings().ok_or_else(|| map::not_found(&session.id))?;
    match command {
        map::Command::Status => say(format!(
            "Session {} (conversation {}): harness {}, model {}, mode {} (ceiling {}).",
            session.id.0, session.conversation_id, settings.harness, settings.model, settings.mode, settings.max_mode
        ))?,
        map::Command::Mode(mode) => match map::mode(&SessionModeId::new(mode), &settings.max_mode) {
            Err(err) => {
                let why = err.data.and_then(|d| d.get("message").and_then(|m| m.as_str()).map(str::to_string));
                say(format!("Mode unchanged: {}.", why.unwrap_or(err.message)))?
            }
            Ok(mode) => {
                kernel
                    .set_mode(session.conversation_id, &mode)
                    .await
                    .map_err(|e| map::kernel_error(e, Some(&session.id)))?;
                session.update_settings(|s| s.mode = mode.clone());
                let update = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(SessionModeId::new(mode.clone())));
                cx.send_notification(SessionNotification::new(session.id.clone(), update))?;
                say(format!("Mode: {mode}."))?;
            }
        },
    }
    Ok(PromptResponse::new(StopReason::EndTurn))
}

/// Tells the editor the slash commands of a session (after the session's response).
fn announce_commands(cx: &ConnectionTo<Client>, session: &SessionId) {
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(map::commands()));
    let _ = cx.send_notification(SessionNotification::new(session.clone(), update));
}

/// session/cancel: open questions are withdrawn and answered (fail closed) first, then the
/// turn is cancelled; the pending prompt answers `cancelled` when the turn ends.
async fn cancel(
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

async fn set_mode(server: Arc<Server>, req: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
    let session = server.session(&req.session_id)?;
    let settings = session.settings().ok_or_else(|| map::not_found(&req.session_id))?;
    let mode = map::mode(&req.mode_id, &settings.max_mode)?;
    let kernel = server.kernel().await?;
    kernel.set_mode(session.conversation_id, &mode).await.map_err(|e| map::kernel_error(e, Some(&session.id)))?;
    session.update_settings(|s| s.mode = mode);
    Ok(SetSessionModeResponse::new())
}

async fn set_config_option(
    server: Arc<Server>,
    req: SetSessionConfigOptionRequest,
) -> Result<SetSessionConfigOptionResponse, Error> {
    let session = server.session(&req.session_id)?;
    if &*req.config_id.0 != map::MODEL_CONFIG_ID {
        return Err(map::invalid_params(format!("unknown config option `{}`", req.config_id.0)));
    }
    let SessionConfigOptionValue::ValueId { value } = &req.value else {
        return Err(map::invalid_params("the model option takes a value id"));
    };
    let model = value.0.to_string();
    let kernel = server.kernel().await?;
    let current = session.settings().map(|s| s.model).unwrap_or_default();
    if model != current {
        let params = serde_json::json!({"conversation_id": session.conversation_id, "model": model});
        match kernel.call("session.set_model", params).await {
            Ok(_) => session.update_settings(|s| s.model = model),
            Err(ClientError::Kernel(e)) if e.code == codes::METHOD_NOT_FOUND => {
                return Err(map::invalid_params("this kernel cannot change the model of a session"));
            }
            Err(e) => return Err(map::kernel_error(e, Some(&session.id))),
        }
    }
    Ok(SetSessionConfigOptionResponse::new(server.config_options(&kernel, &session).await))
}

async fn list(server: Arc<Server>, req: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
    let kernel = server.kernel().await?;
    let conversations = kernel.list().await.map_err(|e| map::kernel_error(e, None))?;
    let cwd = req.cwd.as_ref().and_then(|c| c.to_str()).map(str::to_string);
    let sessions =
        conversations.iter().filter(|c| cwd.is_none() || c.workspace == cwd).map(map::session_info).collect();
    Ok(ListSessionsResponse::new(sessions))
}

async fn close(server: Arc<Server>, req: CloseSessionRequest) -> Result<CloseSessionResponse, Error> {
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

async fn fork(server: Arc<Server>, req: ForkSessionRequest) -> Result<ForkSessionResponse, Error> {
    let session = server.session(&req.session_id)?;
    let kernel = server.kernel().await?;
    let info = kernel.fork(session.conversation_id, None).await.map_err(|e| map::kernel_error(e, Some(&session.id)))?;
    let forked = server.add_session(&info);
    Ok(ForkSessionResponse { session_id: forked.id.clone() })
}

/// Serves ACP on `transport` until the editor closes it.
pub async fn serve(
    server: Arc<Server>,
    transport: impl ConnectTo<agent_client_protocol::Agent> + 'static,
) -> Result<(), Error> {
    let s = server.clone();
    let builder = agent_client_protocol::Agent
        .v1()
        .name("superpi")
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: InitializeRequest,
                            responder: Responder<InitializeResponse>,
                            _cx: ConnectionTo<Client>| {
                    *lock(&server.client_caps) = req.client_capabilities.clone();
                    tracing::debug!(requested = ?req.protocol_version, client = ?req.client_info, "initialize");
                    responder.respond(initialize_response())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: NewSessionRequest,
                            responder: Responder<NewSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    spawn_session_answer(responder, cx, new_session(server.clone(), req), |r| r.session_id.clone());
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: LoadSessionRequest,
                            responder: Responder<LoadSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let server = server.clone();
                    let id = req.session_id.clone();
                    spawn_session_answer(
                        responder,
                        cx.clone(),
                        async move {
                            let (session, kernel) =
                                attach(&server, &req.session_id, &req.mcp_servers, Some(&cx)).await?;
                            session
                                .ensure_pump(&kernel, &cx)
                                .await
                                .map_err(|e| map::kernel_error(e, Some(&session.id)))?;
                            let settings = session.settings().ok_or_else(|| map::not_found(&session.id))?;
                            Ok(LoadSessionResponse::new()
                                .modes(map::modes(&settings.mode, &settings.max_mode))
                                .config_options(server.config_options(&kernel, &session).await))
                        },
                        move |_| id,
                    );
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: ResumeSessionRequest,
                            responder: Responder<ResumeSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let server = server.clone();
                    spawn_answer(responder, async move {
                        let (session, kernel) = attach(&server, &req.session_id, &req.mcp_servers, None).await?;
                        session.ensure_pump(&kernel, &cx).await.map_err(|e| map::kernel_error(e, Some(&session.id)))?;
                        let settings = session.settings().ok_or_else(|| map::not_found(&session.id))?;
                        Ok(ResumeSessionResponse::new()
                            .modes(map::modes(&settings.mode, &settings.max_mode))
                            .config_options(server.config_options(&kernel, &session).await))
                    });
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: PromptRequest, responder: Responder<PromptResponse>, cx: ConnectionTo<Client>| {
                    match start_prompt(&server, &req) {
                        Ok((session, content, guard)) => {
                            spawn_answer(responder, prompt(server.clone(), session, content, guard, cx));
                            Ok(())
                        }
                        Err(err) => responder.respond_with_error(err),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let server = s.clone();
                async move |note: CancelNotification, _cx: ConnectionTo<Client>| {
                    // Claimed here, in dispatch order: the prompt before it is marked.
                    let session = server.session(&note.session_id)?;
                    let (running, questions) = session.take_questions_for_cancel();
                    let server = server.clone();
                    tokio::spawn(async move {
                        if let Err(err) = cancel(server, session, running, questions).await {
                            tracing::debug!("session/cancel: {err:?}");
                        }
                    });
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: SetSessionModeRequest,
                            responder: Responder<SetSessionModeResponse>,
                            _cx: ConnectionTo<Client>| {
                    spawn_answer(responder, set_mode(server.clone(), req));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: SetSessionConfigOptionRequest,
                            responder: Responder<SetSessionConfigOptionResponse>,
                            _cx: ConnectionTo<Client>| {
                    spawn_answer(responder, set_config_option(server.clone(), req));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: ListSessionsRequest,
                            responder: Responder<ListSessionsResponse>,
                            _cx: ConnectionTo<Client>| {
                    spawn_answer(responder, list(server.clone(), req));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: CloseSessionRequest,
                            responder: Responder<CloseSessionResponse>,
                            _cx: ConnectionTo<Client>| {
                    spawn_answer(responder, close(server.clone(), req));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: ForkSessionRequest,
                            responder: Responder<ForkSessionResponse>,
                            _cx: ConnectionTo<Client>| {
                    spawn_answer(responder, fork(server.clone(), req));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        );
    builder.connect_to(transport).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_is_static_and_honest() {
        let init = initialize_response();
        assert_eq!(init.protocol_version, ProtocolVersion::V1);
        let caps = &init.agent_capabilities;
        assert!(caps.load_session);
        assert_eq!(caps.prompt_capabilities, PromptCapabilities::new().embedded_context(true));
        assert_eq!(caps.mcp_capabilities, McpCapabilities::new());
        let session = &caps.session_capabilities;
        assert!(session.list.is_some() && session.resume.is_some() && session.close.is_some());
        assert!(init.auth_methods.is_empty());
        assert_eq!(init.agent_info.map(|i| i.name), Some("superpi".to_string()));
    }
}

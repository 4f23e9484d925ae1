//! The transport: the ACP agent over the SDK's dispatch loop, with one handler per ACP method.
//!
//! Handlers return at once. `initialize` answers from static data; everything that touches
//! the kernel runs in a spawned task that owns the request's responder, so the dispatch loop
//! stays free for `session/cancel` and for the editor's answers to permission requests while
//! a turn runs. The kernel is reached lazily (the first session/new, load, list, ...) and
//! again after it restarted.

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentAuthCapabilities, DeleteSessionRequest, DeleteSessionResponse, LogoutCapabilities, LogoutRequest,
    LogoutResponse, SessionAdditionalDirectoriesCapabilities, SessionDeleteCapabilities,
    SessionSystemPromptCapabilities,
};
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification, CloseSessionRequest,
    CloseSessionResponse, Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionListCapabilities, SessionResumeCapabilities,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, ConnectTo, Error};
use superpi_client::lines::{Line, LineReader};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

pub use crate::agent::{AgentOptions, Server};
use crate::handlers::*;
use crate::request;
use crate::wire::{ForkSessionRequest, ForkSessionResponse, STEERING_METHOD, SteeringRequest, SteeringResponse};
use superpi_client::sync::lock;

/// The answer to `initialize`: static, no kernel needed; `is_set` says which provider keys the
/// environment has (for `authMethods`).
/// The only protocol version this agent speaks is 1: it answers 1 whatever was asked (the
/// client disconnects if it cannot speak it).
pub fn initialize_response(is_set: &dyn Fn(&str) -> bool) -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .auth_methods(crate::auth::methods(is_set))
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(true).audio(false).embedded_context(true))
                .mcp_capabilities(McpCapabilities::new().http(true).sse(true))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new())
                        .delete(SessionDeleteCapabilities::new())
                        .additional_directories(SessionAdditionalDirectoriesCapabilities::new())
                        // `append` only (`{}`): the editor's text follows the harness's prompt.
                        .system_prompt(SessionSystemPromptCapabilities::new()),
                )
                // Keys come from the agent's environment: logout has nothing to forget.
                .auth(AgentAuthCapabilities::new().logout(LogoutCapabilities::new()))
                // ACP v1 cannot advertise steering: clients that look find the method here.
                .meta(steering_meta()),
        )
        .agent_info(Implementation::new("superpi", env!("CARGO_PKG_VERSION")).title("superpi".to_string()))
}

/// `agentCapabilities._meta`: `{"superpi": {"steering": "_session/steering"}}`.
fn steering_meta() -> agent_client_protocol::v1::schema::Meta {
    let mut meta = agent_client_protocol::v1::schema::Meta::new();
    meta.insert("superpi".into(), serde_json::json!({ "steering": STEERING_METHOD }));
    meta
}

/// The longest line read from the editor (16 MiB, as `superpi mcp`): a prompt may embed files.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// ACP as newline-delimited JSON-RPC on a byte stream: the SDK parses and dispatches, but
/// the lines are read by superpi's bounded reader. The SDK's own reader ends the connection
/// at the first line that is not UTF-8 and reads lines of any length; here such a line
/// reaches the SDK as text that is not JSON, which it answers with a parse error (id null),
/// and the connection goes on. Blank lines are skipped.
pub fn line_transport<R, W>(reader: R, writer: W, max_line: usize) -> impl ConnectTo<agent_client_protocol::Agent>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let incoming = futures::stream::unfold(LineReader::new(reader, max_line), |mut lines| async move {
        let line = match lines.next().await {
            Ok(Line::Eof) => return None,
            Ok(Line::Line(bytes)) => {
                Ok(String::from_utf8(bytes).unwrap_or_else(|_| "(a line that is not UTF-8)".to_string()))
            }
            Ok(Line::TooLong { limit }) => Ok(format!("(a line over {limit} bytes)")),
            Err(err) => Err(err),
        };
        Some((line, lines))
    });
    let outgoing = futures::sink::unfold(writer, |mut writer, line: String| async move {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        writer.write_all(&bytes).await?;
        writer.flush().await?;
        Ok::<_, std::io::Error>(writer)
    });
    agent_client_protocol::Lines::new(Box::pin(outgoing), Box::pin(incoming))
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
                    responder.respond(initialize_response(&crate::auth::env_is_set))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: AuthenticateRequest,
                        responder: Responder<AuthenticateResponse>,
                        _cx: ConnectionTo<Client>| {
                match crate::auth::authenticate(&req.method_id, &crate::auth::env_is_set) {
                    Ok(()) => responder.respond(AuthenticateResponse::new()),
                    Err(err) => responder.respond_with_error(err),
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
                    spawn_session_answer(server.clone(), responder, cx, new_session(server.clone(), req), |r| {
                        r.session_id.clone()
                    });
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
                        server.clone(),
                        responder,
                        cx.clone(),
                        async move {
                            let setup = Setup {
                                mcp: &req.mcp_servers,
                                additional_directories: &req.additional_directories,
                                system_prompt: req.system_prompt.as_ref(),
                            };
                            let (session, kernel) = attach(&server, &req.session_id, setup, Some(&cx)).await?;
                            session
                                .ensure_pump(&kernel, &cx)
                                .await
                                .map_err(|e| request::kernel_error(e, Some(&session.id)))?;
                            let settings = session.settings().ok_or_else(|| request::not_found(&session.id))?;
                            Ok(LoadSessionResponse::new()
                                .modes(request::modes(&settings.mode, &settings.max_mode))
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
                        let setup = Setup {
                            mcp: &req.mcp_servers,
                            additional_directories: &req.additional_directories,
                            system_prompt: req.system_prompt.as_ref(),
                        };
                        let (session, kernel) = attach(&server, &req.session_id, setup, None).await?;
                        session
                            .ensure_pump(&kernel, &cx)
                            .await
                            .map_err(|e| request::kernel_error(e, Some(&session.id)))?;
                        let settings = session.settings().ok_or_else(|| request::not_found(&session.id))?;
                        Ok(ResumeSessionResponse::new()
                            .modes(request::modes(&settings.mode, &settings.max_mode))
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
                        Ok(started) => {
                            spawn_answer(responder, prompt(server.clone(), started, cx));
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
                async move |req: DeleteSessionRequest,
                            responder: Responder<DeleteSessionResponse>,
                            _cx: ConnectionTo<Client>| {
                    spawn_answer(responder, delete(server.clone(), req));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            // Provider keys are read from the agent's environment and never travel over ACP:
            // there is no credential of this connection to forget.
            async move |_req: LogoutRequest, responder: Responder<LogoutResponse>, _cx: ConnectionTo<Client>| {
                responder.respond(LogoutResponse::new())
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
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |req: SteeringRequest, responder: Responder<SteeringResponse>, _cx: ConnectionTo<Client>| {
                    spawn_answer(responder, steer(server.clone(), req));
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
        let init = initialize_response(&|_| false);
        assert_eq!(init.protocol_version, ProtocolVersion::V1);
        let caps = &init.agent_capabilities;
        assert!(caps.load_session);
        assert_eq!(caps.prompt_capabilities, PromptCapabilities::new().image(true).embedded_context(true));
        assert_eq!(caps.mcp_capabilities, McpCapabilities::new().http(true).sse(true));
        let session = &caps.session_capabilities;
        assert!(session.list.is_some() && session.resume.is_some() && session.close.is_some());
        assert!(session.delete.is_some() && session.additional_directories.is_some());
        assert!(session.system_prompt.as_ref().is_some_and(|s| s.mode.is_none()), "append only");
        assert!(caps.auth.logout.is_some());
        let steering = caps.meta.as_ref().and_then(|m| m.get("superpi")).and_then(|s| s.get("steering"));
        assert_eq!(steering.and_then(|m| m.as_str()), Some(crate::wire::STEERING_METHOD));
        assert_eq!(init.auth_methods.len(), crate::auth::KEYS.len());
        assert_eq!(init.agent_info.map(|i| i.name), Some("superpi".to_string()));
    }
}

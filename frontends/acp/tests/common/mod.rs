//! An editor for the tests: the official crate's client side driving a real `superpi acp`.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, InitializeRequest, InitializeResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    SessionUpdate, TextContent,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client, Error, LineDirection};
use superpi_tests::{TestEnv, superpi_bin};
use tokio::sync::mpsc;

pub const WAIT: Duration = Duration::from_secs(60);

/// What the editor saw besides responses.
pub struct Seen {
    pub updates: mpsc::UnboundedReceiver<SessionNotification>,
    pub permissions: mpsc::UnboundedReceiver<RequestPermissionRequest>,
    /// Questions left open ([`Answer::Hold`]): the test answers (or drops) them.
    pub held: mpsc::UnboundedReceiver<(RequestPermissionRequest, Responder<RequestPermissionResponse>)>,
    /// The agent's `fs/read_text_file` requests, in order.
    pub reads: mpsc::UnboundedReceiver<ReadTextFileRequest>,
}

/// The editor's open buffers: `fs/read_text_file` answers from here (absolute path to
/// text); any other path fails as not found.
pub type Buffers = HashMap<PathBuf, String>;

/// How the editor answers permission requests.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// Select this option id.
    Select(&'static str),
    /// Answer `cancelled` (the person dismissed the question).
    Dismiss,
    /// Leave the question open and hand it to the test.
    Hold,
}

impl Seen {
    /// The next session update (fails the test after [`WAIT`]).
    pub async fn update(&mut self) -> SessionNotification {
        tokio::time::timeout(WAIT, self.updates.recv()).await.expect("a session update in time").expect("updates open")
    }

    /// Every update received so far, without waiting.
    pub fn drain(&mut self) -> Vec<SessionNotification> {
        let mut out = Vec::new();
        while let Ok(u) = self.updates.try_recv() {
            out.push(u);
        }
        out
    }

    /// Waits for an update that matches.
    pub async fn until(&mut self, mut pred: impl FnMut(&SessionUpdate) -> bool) -> SessionNotification {
        loop {
            let u = self.update().await;
            if pred(&u.update) {
                return u;
            }
        }
    }
}

/// `superpi acp` as an ACP agent process with the test environment, plus `extra` variables
/// (which the kernel it autostarts inherits).
pub fn agent_process(env: &TestEnv, extra: &[(&str, &str)], stdout: Arc<Mutex<Vec<String>>>) -> AcpAgent {
    let mut config = AcpAgentConfig::new(superpi_bin())
        .arg("acp")
        .env("SUPERPI_DATA_DIR", env.locations.data_dir.display().to_string())
        .env("SUPERPI_CONFIG_DIR", env.locations.config_dir.display().to_string())
        .env("SUPERPI_RUNTIME_DIR", env.locations.runtime_dir.display().to_string())
        .env("SUPERPI_WORKSPACES_DIR", env.locations.workspaces_dir.display().to_string())
        .env("HOME", env.home.display().to_string())
        .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()));
    for (key, value) in extra {
        config = config.env(*key, *value);
    }
    AcpAgent::new(config).with_debug(move |line, direction| {
        if direction == LineDirection::Stdout {
            stdout.lock().unwrap().push(line.to_string());
        }
    })
}

/// Runs `body` as an editor connected to a fresh `superpi acp`. Permission requests are
/// answered with `answer` (an option id, or `None` for a cancelled outcome). Returns the
/// body's result and every line the agent wrote on stdout.
pub async fn with_editor<R>(
    env: &TestEnv,
    answer: Answer,
    body: impl AsyncFnOnce(ConnectionTo<Agent>, Seen) -> Result<R, Error>,
) -> (Result<R, Error>, Vec<String>) {
    with_editor_env(env, &[], answer, body).await
}

/// [`with_editor`] with extra environment variables for the agent (and its kernel).
pub async fn with_editor_env<R>(
    env: &TestEnv,
    extra: &[(&str, &str)],
    answer: Answer,
    body: impl AsyncFnOnce(ConnectionTo<Agent>, Seen) -> Result<R, Error>,
) -> (Result<R, Error>, Vec<String>) {
    with_editor_buffers(env, extra, answer, Buffers::new(), body).await
}

/// [`with_editor_env`] with an editor that serves `fs/read_text_file` from `buffers` (it
/// says so only when initialized with [`initialize_reading`]).
pub async fn with_editor_buffers<R>(
    env: &TestEnv,
    extra: &[(&str, &str)],
    answer: Answer,
    buffers: Buffers,
    body: impl AsyncFnOnce(ConnectionTo<Agent>, Seen) -> Result<R, Error>,
) -> (Result<R, Error>, Vec<String>) {
    let (rtx, rrx) = mpsc::unbounded_channel();
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let (utx, urx) = mpsc::unbounded_channel();
    let (ptx, prx) = mpsc::unbounded_channel();
    let (htx, hrx) = mpsc::unbounded_channel();
    let result = Client
        .v1()
        .name("superpi-acp-test")
        .on_receive_notification(
            async move |n: SessionNotification, _cx: ConnectionTo<Agent>| {
                let _ = utx.send(n);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx: ConnectionTo<Agent>| {
                let _ = ptx.send(r.clone());
                let outcome = match answer {
                    Answer::Select(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                    Answer::Dismiss => RequestPermissionOutcome::Cancelled,
                    Answer::Hold => {
                        let _ = htx.send((r, responder));
                        return Ok(());
                    }
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: ReadTextFileRequest,
                        responder: Responder<ReadTextFileResponse>,
                        _cx: ConnectionTo<Agent>| {
                let _ = rtx.send(r.clone());
                match buffers.get(&r.path) {
                    Some(text) => responder.respond(ReadTextFileResponse::new(text.clone())),
                    None => responder.respond_with_internal_error(format!("no buffer for {}", r.path.display())),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent_process(env, extra, stdout.clone()), async move |cx: ConnectionTo<Agent>| {
            body(cx, Seen { updates: urx, permissions: prx, held: hrx, reads: rrx }).await
        })
        .await;
    let lines = stdout.lock().unwrap().clone();
    (result, lines)
}

pub async fn initialize(cx: &ConnectionTo<Agent>) -> Result<InitializeResponse, Error> {
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await
}

/// `initialize` from an editor that advertises `fs.readTextFile`.
pub async fn initialize_reading(cx: &ConnectionTo<Agent>) -> Result<InitializeResponse, Error> {
    let caps = ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true));
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps)).block_task().await
}

pub async fn new_session(cx: &ConnectionTo<Agent>, env: &TestEnv) -> Result<NewSessionResponse, Error> {
    cx.send_request(NewSessionRequest::new(env.workspace.clone())).block_task().await
}

pub fn text_prompt(session: &SessionId, text: &str) -> PromptRequest {
    PromptRequest::new(session.clone(), vec![ContentBlock::Text(TextContent::new(text))])
}

/// The concatenated text of agent message chunks among `updates`.
pub fn agent_text(updates: &[SessionNotification]) -> String {
    updates
        .iter()
        .filter_map(|n| match &n.update {
            SessionUpdate::AgentMessageChunk(c) => match &c.content {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Every stdout line must be one JSON-RPC 2.0 message.
pub fn assert_jsonrpc_only(lines: &[String]) {
    assert!(!lines.is_empty(), "the agent wrote nothing");
    for line in lines {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert_eq!(v.get("jsonrpc").and_then(|j| j.as_str()), Some("2.0"), "not JSON-RPC 2.0: {line}");
    }
}

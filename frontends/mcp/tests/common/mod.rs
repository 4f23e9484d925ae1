//! What the end-to-end tests share: the real `superpi mcp` process driven by rmcp's client
//! over its stdio, a client that records notifications and (when told to) answers
//! elicitation, and small helpers for calls and results.
#![allow(dead_code, deprecated, clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RoleClient, RunningService,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, ServiceError};
use serde_json::Value;
use superpi_tests::{TestEnv, superpi_bin};
use tokio::sync::mpsc;

/// Bound for anything a test waits on, so a hang fails instead of blocking CI.
pub const WAIT: Duration = Duration::from_secs(20);

/// An MCP client that records the notifications it gets and, when it declares elicitation,
/// answers each elicitation with the next of its answers (declining once they run out); an
/// accepted form gets the last option of each of its fields.
pub struct Recorder {
    config: ClientConfig,
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    logs: mpsc::UnboundedSender<LoggingMessageNotificationParam>,
    answers: Mutex<VecDeque<ElicitationAction>>,
    asked: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let _ = self.progress.send(params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.logs.send(params);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = request else {
            panic!("a form elicitation was expected: {request:?}");
        };
        let _ = self.asked.send(message);
        let action = self.answers.lock().unwrap().pop_front().unwrap_or(ElicitationAction::Decline);
        let result = ElicitResult::new(action.clone());
        // A form's fields (the model's questions) are answered with the last choice each offers.
        let fields = serde_json::to_value(&requested_schema).unwrap()["properties"].clone();
        let content: serde_json::Map<String, Value> = fields
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, field)| {
                (name.clone(), field["enum"].as_array().and_then(|e| e.last()).cloned().unwrap_or_default())
            })
            .collect();
        Ok(if action == ElicitationAction::Accept { result.with_content(Value::Object(content)) } else { result })
    }
}

pub struct Session {
    pub client: RunningService<RoleClient, Recorder>,
    pub progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    pub logs: mpsc::UnboundedReceiver<LoggingMessageNotificationParam>,
    /// The messages of the elicitations the server sent.
    pub asked: mpsc::UnboundedReceiver<String>,
}

/// How the test's client presents itself.
#[derive(Default)]
pub struct ClientSetup {
    /// Declare elicitation and answer with these, in order; `None`: no elicitation
    /// capability (a client like OpenCode's, with nobody to ask).
    pub elicitation: Option<Vec<ElicitationAction>>,
    /// Arguments after `superpi mcp`.
    pub args: Vec<&'static str>,
    /// Declare the tasks extension.
    pub tasks: bool,
}

pub async fn connect(env: &TestEnv, version: ProtocolVersion) -> Session {
    connect_with(env, version, ClientSetup::default()).await
}

pub async fn connect_with(env: &TestEnv, version: ProtocolVersion, setup: ClientSetup) -> Session {
    connect_in(env, ClientLifecycleMode::Initialize, version, setup).await
}

/// A 2026-07-28 client: `server/discover`, then its version and capabilities in every request.
pub async fn connect_modern(env: &TestEnv, setup: ClientSetup) -> Session {
    let mode = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    connect_in(env, mode, ProtocolVersion::V_2026_07_28, setup).await
}

async fn connect_in(env: &TestEnv, mode: ClientLifecycleMode, version: ProtocolVersion, setup: ClientSetup) -> Session {
    let mut cmd = tokio::process::Command::new(superpi_bin());
    cmd.arg("mcp").args(&setup.args).current_dir(&env.workspace);
    env.apply_env(cmd.as_std_mut());
    let (transport, _stderr) =
        TokioChildProcess::builder(cmd).stderr(Stdio::inherit()).spawn().expect("spawn superpi mcp");
    let (ptx, progress) = mpsc::unbounded_channel();
    let (ltx, logs) = mpsc::unbounded_channel();
    let (atx, asked) = mpsc::unbounded_channel();
    let mut capabilities = match setup.elicitation {
        Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
        None => ClientCapabilities::default(),
    };
    if setup.tasks {
        capabilities.extensions = ClientCapabilities::builder().enable_tasks().build().extensions;
    }
    let config =
        ClientConfig::new(capabilities, Implementation::new("superpi-e2e", "0")).with_protocol_version(version);
    let answers = Mutex::new(setup.elicitation.unwrap_or_default().into());
    let recorder = Recorder { config, progress: ptx, logs: ltx, answers, asked: atx };
    let client = tokio::time::timeout(WAIT, recorder.serve_with_lifecycle(transport, mode))
        .await
        .expect("start in time")
        .expect("start");
    Session { client, progress, logs, asked }
}

pub fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = arguments.as_object().cloned();
    params
}

pub async fn call_tool(session: &Session, name: &str, arguments: Value) -> Result<CallToolResult, ServiceError> {
    tokio::time::timeout(WAIT, session.client.peer().call_tool(call(name, arguments)))
        .await
        .expect("tools/call in time")
}

pub fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect()
}

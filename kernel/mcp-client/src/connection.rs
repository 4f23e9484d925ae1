//! One running external MCP server: its confined process and rmcp's client session over the
//! process's stdin and stdout (stdio), or the session over Streamable HTTP (a URL); its tool
//! list (listed again on `notifications/tools/list_changed`) and a process's last stderr
//! lines, whose one telling line goes with its errors.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use superpi_policy::mcp_servers::expand_vars;
use superpi_policy::{McpServerConfig, McpTransport};
use superpi_proto::tool::{ToolCallResult, ToolDef};
use superpi_sandbox::{NetworkRefused, Sandbox, ServerHandle, ServerSpec, ToolCall};
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use crate::elicit::{Asker, Askers};
use crate::lock;
use crate::tools::{call_result, tool_def};

/// How long a server has to start and answer `initialize` and `tools/list`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How a start that timed out begins its error.
pub(crate) const NO_ANSWER: &str = "it did not answer within";

/// Why a server did not start, with what it was refused of the network meanwhile.
#[derive(Debug, Clone)]
pub(crate) struct Unstarted {
    pub why: String,
    /// None when its sockets were not watched (it has network, speaks HTTP, or the machine
    /// gives no listener).
    pub network: Option<NetworkRefused>,
    /// It refused superpi for want of an OAuth login (a 401 or 403 challenge).
    pub login: bool,
}

impl From<String> for Unstarted {
    fn from(why: String) -> Unstarted {
        Unstarted { why, network: None, login: false }
    }
}
/// A call's deadline when the call names none.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// Stderr lines kept per server, for notices and errors.
const STDERR_LINES: usize = 20;

/// Which server process: one per workspace and definition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerKey {
    pub workspace: PathBuf,
    pub name: String,
    pub config: McpServerConfig,
    /// Whether it may open network sockets.
    pub network: bool,
}

/// One tool of a server: its facts as superpi offers it, and its name on the server.
#[derive(Debug, Clone)]
pub struct Listed {
    pub def: ToolDef,
    pub tool: String,
}

/// How a call to a server ended.
pub enum Called {
    /// The server answered (or the call was cancelled or passed its deadline).
    Answered(ToolCallResult),
    /// The server went away during the call: why, with what its stderr said.
    Lost(String),
}

pub struct Connection {
    name: String,
    service: RunningService<RoleClient, ListWatcher>,
    tools: Arc<RwLock<Vec<Listed>>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Cancelled when its stderr closes (it exited).
    stderr_closed: CancellationToken,
    /// A stdio server's process (none for an HTTP server).
    process: Option<ServerHandle>,
    /// Who answers its questions, by call in flight.
    askers: Askers,
    /// An HTTP server's URL, and the data directory its OAuth login lives in.
    login: Option<(PathBuf, String)>,
}

impl Connection {
    /// Starts (or, over HTTP, reaches) the server of `key` and lists its tools. A process is
    /// confined to its workspace, with `state_dir` its own (and its `HOME`).
    pub async fn start(sandbox: &Sandbox, key: &ServerKey, state_dir: PathBuf) -> Result<Connection, Unstarted> {
        let name = &key.name;
        let tools = Arc::new(RwLock::new(Vec::new()));
        let askers = Askers::default();
        let watcher = ListWatcher { server: name.clone(), tools: tools.clone(), askers: askers.clone() };
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_closed = CancellationToken::new();
        let (service, listed, process) = match &key.config.transport {
            McpTransport::Stdio { command, args, env, cwd } => {
                // The user's registry and proxy settings, never their tokens.
                let mut vars: Vec<(String, String)> = match &sandbox.config().home {
                    Some(home) => crate::package_config::write_cleaned(home, &state_dir),
                    None => Vec::new(),
                };
                vars.retain(|(k, _)| !env.contains_key(k));
                for (k, v) in env {
                    vars.push((k.clone(), expand_vars(v, kernel_var).map_err(|why| format!("env {k}: {why}"))?));
                }
                let spec = ServerSpec {
                    program: command.clone(),
                    args: args.clone(),
                    env: vars,
                    cwd: cwd.clone(),
                    workspace: key.workspace.clone(),
                    network: key.network,
                    state_dir: Some(state_dir),
                    readable: Vec::new(),
                };
                let process = sandbox.start_server(spec).await?;
                tokio::spawn(keep_stderr(name.clone(), process.stderr, stderr.clone(), stderr_closed.clone()));
                match initialized(serve(watcher, (process.stdout, process.stdin))).await {
                    Ok((service, listed)) => (service, listed, Some(process.handle)),
                    Err(why) => {
                        // The server's last words come with its exit, which closes stderr.
                        let _ = tokio::time::timeout(Duration::from_secs(2), stderr_closed.cancelled()).await;
                        let network = process.handle.network_refused();
                        return Err(Unstarted { why: with_stderr(why, &stderr), network, login: false });
                    }
                }
            }
            McpTransport::Http { url, headers, bearer_token_env, sse, .. } => {
                stderr_closed.cancel();
                let headers = http_headers(headers, bearer_token_env.as_deref())?;
                // A login's tokens, unless the settings send their own authorization.
                let authorized = match headers.contains_key(AUTHORIZATION) {
                    true => None,
                    // Boxed, as each session's start below: their futures are large.
                    false => Box::pin(crate::oauth::authorized_client(&sandbox.config().data_dir, name, url))
                        .await
                        .map_err(|e| format!("its OAuth login: {e}"))?,
                };
                let refused = Arc::new(Mutex::new(None));
                let streamable = match (sse, authorized) {
                    (true, _) => Err(String::new()),
                    (false, Some(client)) => {
                        let transport = StreamableHttpClientTransport::with_client(client, http_config(url, &headers));
                        Box::pin(initialized(noting_refusal(serve(watcher.clone(), transport), &refused, url))).await
                    }
                    (false, None) => {
                        let transport = http_transport(url, &headers);
                        Box::pin(initialized(noting_refusal(serve(watcher.clone(), transport), &refused, url))).await
                    }
                };
                // Refused for want of a login: no HTTP+SSE fallback, and what to do.
                if let Some(refused) = lock(&refused).take() {
                    return Err(Unstarted { login: true, ..Unstarted::from(refused.advice(name)) });
                }
                // A server of the older HTTP+SSE transport refuses the POST (4xx): its GET
                // opens the stream. When that fails too, the first failure says why.
                let (service, listed) = match streamable {
                    Ok(started) => started,
                    Err(why) => match crate::sse::connect(url, headers).await {
                        Ok(pipe) => {
                            tracing::info!(server = %name, "MCP server reached over HTTP+SSE");
                            initialized(serve(watcher, pipe)).await?
                        }
                        Err(sse_why) if *sse || why.starts_with(NO_ANSWER) => return Err(Unstarted::from(sse_why)),
                        Err(sse_why) => {
                            tracing::debug!(server = %name, "no HTTP+SSE fallback: {sse_why}");
                            return Err(Unstarted::from(why));
                        }
                    },
                };
                (service, listed, None)
            }
        };
        *tools.write().unwrap_or_else(|p| p.into_inner()) = listed_tools(name, &listed);
        tracing::info!(server = %name, workspace = %key.workspace.display(), tools = listed.len(), "MCP server started");
        let login = match &key.config.transport {
            McpTransport::Http { url, .. } => Some((sandbox.config().data_dir.clone(), url.clone())),
            McpTransport::Stdio { .. } => None,
        };
        Ok(Connection { name: name.clone(), service, tools, stderr, stderr_closed, process, askers, login })
    }

    pub fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }

    pub fn pid(&self) -> Option<i32> {
        self.process.as_ref().map(ServerHandle::pid)
    }

    /// Its tools as last listed.
    pub fn tools(&self) -> Vec<Listed> {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Calls `tool`. Cancel and the deadline drop the request, which sends
    /// `notifications/cancelled` to the server.
    pub async fn call(
        &self,
        tool: &str,
        call: &ToolCall,
        cancel: &CancellationToken,
        asker: Option<Arc<dyn Asker>>,
    ) -> Called {
        let arguments = match &call.arguments {
            serde_json::Value::Object(map) => Some(map.clone()),
            serde_json::Value::Null => None,
            _ => {
                return Called::Answered(ToolCallResult::error(format!(
                    "`{}`: the arguments must be an object",
                    call.name
                )));
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let deadline = call.timeout.unwrap_or(CALL_TIMEOUT);
        let name = &self.name;
        let _asking = self.askers.push(asker);
        tokio::select! {
            // Drives 2026-07-28 `input_required` rounds through the handler's elicitation.
            answer = self.service.call_tool(params) => match answer {
                Ok(result) => Called::Answered(call_result(result)),
                Err(err) if err.auth_challenge().is_some() => {
                    let refused = self.refused(err.auth_challenge().unwrap_or_default());
                    let why = format!("the MCP server `{name}` refused the call: {}", refused.advice(name));
                    if self.alive() { Called::Answered(ToolCallResult::error(why)) } else { Called::Lost(why) }
                }
                Err(err) if self.alive() && matches!(err, rmcp::ServiceError::McpError(_)) => {
                    Called::Answered(ToolCallResult::error(format!("the MCP server `{name}` refused the call: {err}")))
                }
                Err(err) => {
                    // Its exit closes stderr too: give its last words a moment.
                    let _ = tokio::time::timeout(Duration::from_millis(500), self.stderr_closed.cancelled()).await;
                    Called::Lost(with_stderr(format!("the MCP server `{name}` went away during the call: {err}"), &self.stderr))
                }
            },
            _ = cancel.cancelled() => Called::Answered(ToolCallResult::error("cancelled")),
            _ = tokio::time::sleep(deadline) => {
                Called::Answered(ToolCallResult::error(format!("the MCP server `{name}` did not answer within {deadline:?}")))
            }
        }
    }
}

impl Connection {
    /// What a 401 or 403 challenge during a call asks; a scope asked for is noted for the
    /// next `superpi mcp login`.
    fn refused(&self, challenge: &str) -> crate::oauth::Refused {
        let Some((data_dir, url)) = &self.login else { return crate::oauth::Refused::Unauthorized };
        let refused = crate::oauth::Refused::of(challenge, url);
        if let crate::oauth::Refused::Scope(Some(scope)) = &refused
            && let Err(err) = crate::oauth::want_scope(data_dir, &self.name, scope)
        {
            tracing::warn!(server = %self.name, "noting the scope it asks for: {err}");
        }
        refused
    }
}

type Session = RunningService<RoleClient, ListWatcher>;

/// The session once `initialize` and `tools/list` are answered (within [`START_TIMEOUT`]).
async fn initialized<E: std::fmt::Display>(
    serving: impl Future<Output = Result<Session, E>>,
) -> Result<(Session, Vec<rmcp::model::Tool>), String> {
    let started = tokio::time::timeout(START_TIMEOUT, async {
        let service = serving.await.map_err(|e| e.to_string())?;
        let listed = service.peer().list_all_tools().await.map_err(|e| format!("tools/list: {e}"))?;
        Ok::<_, String>((service, listed))
    });
    started.await.unwrap_or_else(|_| Err(format!("{NO_ANSWER} {START_TIMEOUT:?}")))
}

/// A variable of the kernel's environment, for `${NAME}` in a server's headers and env.
fn kernel_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Serves `handler` over `transport`: `server/discover` at 2026-07-28 first, `initialize`
/// for a server that does not know it (rmcp's auto lifecycle).
fn serve<T, E, A>(
    handler: ListWatcher,
    transport: T,
) -> impl Future<Output = Result<Session, rmcp::service::ClientInitializeError>>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    };
    handler.serve_with_lifecycle(transport, lifecycle)
}

/// The headers sent to an HTTP server: its settings' (with `${VAR}`s from the kernel's
/// environment) and the bearer token of the kernel's variable `bearer_token_env`.
fn http_headers(
    headers: &std::collections::BTreeMap<String, String>,
    bearer_token_env: Option<&str>,
) -> Result<HeaderMap, String> {
    // The providers install the same one; whichever comes first is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let value = expand_vars(value, kernel_var).map_err(|why| format!("header {name}: {why}"))?;
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("header {name}: {e}"))?;
        let value = HeaderValue::from_str(&value).map_err(|e| format!("header {name}: {e}"))?;
        map.insert(name, value);
    }
    if let Some(variable) = bearer_token_env {
        let token = std::env::var(variable)
            .map_err(|_| format!("`{variable}` (its bearer token) is not set in the kernel's environment"))?;
        let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|e| format!("`{variable}`: {e}"))?;
        map.insert(AUTHORIZATION, value);
    }
    Ok(map)
}

/// `serving`, noting in `refused` a refusal that a login would answer.
async fn noting_refusal(
    serving: impl Future<Output = Result<Session, rmcp::service::ClientInitializeError>>,
    refused: &Mutex<Option<crate::oauth::Refused>>,
    url: &str,
) -> Result<Session, rmcp::service::ClientInitializeError> {
    let served = serving.await;
    if let Err(challenge) = served.as_ref().map_err(|e| e.auth_challenge()) {
        *lock(refused) = challenge.map(|c| crate::oauth::Refused::of(c, url));
    }
    served
}

/// Streamable HTTP to `url` with these headers.
fn http_transport(url: &str, headers: &HeaderMap) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(http_config(url, headers))
}

/// The transport's settings for `url` with these headers (a bearer token among them).
fn http_config(url: &str, headers: &HeaderMap) -> StreamableHttpClientTransportConfig {
    let mut custom = std::collections::HashMap::new();
    let mut token = None;
    for (name, value) in headers {
        match (name == AUTHORIZATION, value.to_str().ok().and_then(|v| v.strip_prefix("Bearer "))) {
            (true, Some(bearer)) => token = Some(bearer.to_string()),
            _ => {
                custom.insert(name.clone(), value.clone());
            }
        }
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    config
}

fn listed_tools(server: &str, listed: &[rmcp::model::Tool]) -> Vec<Listed> {
    listed.iter().map(|tool| Listed { def: tool_def(server, tool), tool: tool.name.to_string() }).collect()
}

/// The client side's handler: lists the tools again when the server says they changed.
#[derive(Clone)]
struct ListWatcher {
    server: String,
    tools: Arc<RwLock<Vec<Listed>>>,
    askers: Askers,
}

impl rmcp::ClientHandler for ListWatcher {
    /// It answers forms (elicitation) through the person, for the call that asks.
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut form = rmcp::model::ElicitationCapability::default();
        form.form = Some(rmcp::model::FormElicitationCapability::default());
        let mut capabilities = rmcp::model::ClientCapabilities::default();
        capabilities.elicitation = Some(form);
        let mut info = rmcp::model::ClientConfig::default();
        info.capabilities = capabilities;
        info.client_info = rmcp::model::Implementation::new("superpi", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(self.askers.answer(&self.server, request).await)
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        match context.peer.list_all_tools().await {
            Ok(listed) => {
                tracing::info!(server = %self.server, tools = listed.len(), "MCP server's tools changed");
                *self.tools.write().unwrap_or_else(|p| p.into_inner()) = listed_tools(&self.server, &listed);
            }
            Err(err) => tracing::warn!(server = %self.server, "listing the changed tools: {err}"),
        }
    }
}

async fn keep_stderr(
    name: String,
    stderr: tokio::net::unix::pipe::Receiver,
    kept: Arc<Mutex<VecDeque<String>>>,
    closed: CancellationToken,
) {
    let _closed = closed.drop_guard();
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %name, "{line}");
        let mut kept = lock(&kept);
        if kept.len() == STDERR_LINES {
            kept.pop_front();
        }
        kept.push_back(line);
    }
}

/// `why`, with the one line of its stderr that says what went wrong (a refused path or call,
/// else its last meaningful line: see `stderr.rs`).
fn with_stderr(why: String, stderr: &Mutex<VecDeque<String>>) -> String {
    let lines = lock(stderr);
    match crate::stderr::failure_cause(lines.iter().map(String::as_str)) {
        Some(cause) => format!("{why}; it said: {cause}"),
        None => why,
    }
}

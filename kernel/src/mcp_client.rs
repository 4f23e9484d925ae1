//! External MCP servers (the user's `mcp_servers` settings): started through the sandbox crate,
//! confined to the workspace of the conversation that first needs them, on the first turn that
//! needs them; their tools registered live in the tool registry as `mcp__SERVER__TOOL`, run by
//! [`McpTool`] through the kernel's one tool-call pipeline (policy and questions first). A
//! server that does not start fails no turn: the caller gets a notice naming it and its last
//! stderr lines. A server whose connection closed is started again on the next turn.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use superpi_policy::McpServerConfig;
use superpi_proto::method::McpServerStatus;
use superpi_proto::tool::{ToolCallResult, ToolDef};
use superpi_sandbox::{RunFuture, Sandbox, ServerHandle, ServerSpec, ToolCall, ToolRunner};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::mcp_tools::{call_result, tool_def};
use crate::sync::lock;

/// How long a server has to start and answer `initialize` and `tools/list`.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// A call's deadline when the call names none.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// Stderr lines kept per server, for notices and errors.
const STDERR_LINES: usize = 20;

/// The kernel's MCP servers, by name. A slot is replaced (and its server started again on the
/// next need) when its server's connection closed, its start failed, or its settings changed.
pub(crate) struct McpClients {
    sandbox: Sandbox,
    servers: Mutex<HashMap<String, Arc<Slot>>>,
}

/// One server's start, shared by the turns that wait for it.
struct Slot {
    config: McpServerConfig,
    started: tokio::sync::OnceCell<Result<Arc<Connection>, String>>,
}

impl Slot {
    fn stale(&self, config: &McpServerConfig) -> bool {
        self.config != *config || self.started.get().is_some_and(|r| r.as_ref().map_or(true, |c| !c.alive()))
    }
}

/// One running server.
struct Connection {
    name: String,
    workspace: std::path::PathBuf,
    service: RunningService<RoleClient, ()>,
    tools: Vec<ToolDef>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    _process: ServerHandle,
}

impl Connection {
    fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }
}

impl McpClients {
    pub fn new(sandbox: Sandbox) -> Self {
        McpClients { sandbox, servers: Mutex::new(HashMap::new()) }
    }

    /// The tools of `servers`, starting those not running (confined to `workspace`), with a
    /// notice for each that could not start. Without a workspace no server starts.
    pub async fn tools(
        &self,
        servers: &BTreeMap<String, McpServerConfig>,
        workspace: Option<&Path>,
    ) -> (Vec<ToolDef>, Vec<String>) {
        let (mut tools, mut notices) = (Vec::new(), Vec::new());
        let Some(workspace) = workspace.filter(|_| !servers.is_empty()) else {
            return (tools, notices);
        };
        for (name, config) in servers {
            let (slot, restarted) = {
                let mut slots = lock(&self.servers);
                let old = slots.get(name).filter(|slot| slot.stale(config)).cloned();
                let restarted = old.as_ref().is_some_and(|slot| matches!(slot.started.get(), Some(Ok(_))));
                if old.is_some() || !slots.contains_key(name) {
                    let fresh = Slot { config: config.clone(), started: tokio::sync::OnceCell::new() };
                    slots.insert(name.clone(), Arc::new(fresh));
                }
                let Some(slot) = slots.get(name).cloned() else { continue };
                (slot, restarted)
            };
            match slot.started.get_or_init(|| self.start(name, config, workspace)).await {
                Ok(conn) => {
                    if restarted {
                        notices.push(format!("the MCP server `{name}` had stopped and was started again"));
                    }
                    tools.extend(conn.tools.iter().cloned());
                }
                Err(why) => notices.push(format!("the MCP server `{name}` is not available: {why}")),
            }
        }
        (tools, notices)
    }

    /// What `kernel.status` says of each server.
    pub fn status(&self) -> Vec<McpServerStatus> {
        let slots: Vec<(String, Arc<Slot>)> =
            lock(&self.servers).iter().map(|(name, slot)| (name.clone(), slot.clone())).collect();
        let mut listed: Vec<McpServerStatus> = slots
            .into_iter()
            .map(|(name, slot)| {
                let mut status = McpServerStatus {
                    name,
                    workspace: String::new(),
                    state: "starting".into(),
                    pid: None,
                    tools: Vec::new(),
                    conversations: Vec::new(),
                    idle_ms: 0,
                    error: None,
                };
                match slot.started.get() {
                    None => {}
                    Some(Err(why)) => {
                        status.state = "failed".into();
                        status.error = Some(why.clone());
                    }
                    Some(Ok(conn)) => {
                        status.state = if conn.alive() { "running" } else { "stopped" }.into();
                        status.workspace = conn.workspace.display().to_string();
                        status.pid = Some(conn._process.pid());
                        status.tools = conn.tools.iter().map(|t| t.name.clone()).collect();
                    }
                }
                status
            })
            .collect();
        listed.sort_by(|a, b| (&a.workspace, &a.name).cmp(&(&b.workspace, &b.name)));
        listed
    }

    async fn start(&self, name: &str, config: &McpServerConfig, workspace: &Path) -> Result<Arc<Connection>, String> {
        let spec = ServerSpec {
            program: config.command.clone(),
            args: config.args.clone(),
            env: config.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            cwd: config.cwd.clone(),
            workspace: workspace.to_path_buf(),
            network: true,
        };
        let process = self.sandbox.start_server(spec).await?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let reader = tokio::spawn(keep_stderr(name.to_string(), process.stderr, stderr.clone()));
        let started = tokio::time::timeout(START_TIMEOUT, async {
            let service = ().serve((process.stdout, process.stdin)).await.map_err(|e| e.to_string())?;
            let listed = service.peer().list_all_tools().await.map_err(|e| format!("tools/list: {e}"))?;
            Ok::<_, String>((service, listed))
        })
        .await
        .unwrap_or_else(|_| Err(format!("it did not answer within {START_TIMEOUT:?}")));
        let (service, listed) = match started {
            Ok(ok) => ok,
            Err(why) => {
                // The server's last words come with its exit, which closes stderr.
                let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
                return Err(with_stderr(why, &stderr));
            }
        };
        let tools: Vec<ToolDef> = listed.iter().map(|tool| tool_def(name, tool)).collect();
        let conn = Arc::new(Connection {
            name: name.to_string(),
            workspace: workspace.to_path_buf(),
            service,
            tools: tools.clone(),
            stderr,
            _process: process.handle,
        });
        for (def, tool) in tools.into_iter().zip(listed) {
            let runner = Arc::new(McpTool { conn: Arc::downgrade(&conn), tool: tool.name.to_string() });
            if let Err(err) = self.sandbox.registry().register_live(def, runner) {
                tracing::warn!(server = name, "an MCP tool is not offered: {err}");
            }
        }
        tracing::info!(server = name, tools = conn.tools.len(), "MCP server started");
        Ok(conn)
    }
}

async fn keep_stderr(name: String, stderr: tokio::net::unix::pipe::Receiver, kept: Arc<Mutex<VecDeque<String>>>) {
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

fn with_stderr(why: String, stderr: &Mutex<VecDeque<String>>) -> String {
    let lines = lock(stderr);
    if lines.is_empty() {
        return why;
    }
    let last: Vec<&str> = lines.iter().rev().take(5).rev().map(String::as_str).collect();
    format!("{why}; its last stderr lines: {}", last.join(" | "))
}

/// One tool of a running server. A call that is cancelled or passes its deadline drops the
/// request, which sends `notifications/cancelled` to the server.
struct McpTool {
    conn: std::sync::Weak<Connection>,
    tool: String,
}

impl ToolRunner for McpTool {
    fn run<'a>(
        &'a self,
        call: &'a ToolCall,
        cancel: CancellationToken,
        _progress: Option<mpsc::Sender<String>>,
    ) -> RunFuture<'a> {
        Box::pin(async move {
            let Some(conn) = self.conn.upgrade() else {
                return ToolCallResult::error(format!("`{}`: its MCP server has stopped", call.name));
            };
            let arguments = match &call.arguments {
                serde_json::Value::Object(map) => Some(map.clone()),
                serde_json::Value::Null => None,
                _ => return ToolCallResult::error(format!("`{}`: the arguments must be an object", call.name)),
            };
            let mut params = CallToolRequestParams::new(self.tool.clone());
            params.arguments = arguments;
            let deadline = call.timeout.unwrap_or(CALL_TIMEOUT);
            tokio::select! {
                answer = conn.service.peer().call_tool(params) => match answer {
                    Ok(result) => call_result(result),
                    Err(err) => ToolCallResult::error(with_stderr(
                        format!("the MCP server `{}` failed the call: {err}", conn.name),
                        &conn.stderr,
                    )),
                },
                _ = cancel.cancelled() => ToolCallResult::error("cancelled"),
                _ = tokio::time::sleep(deadline) => {
                    ToolCallResult::error(format!("the MCP server `{}` did not answer within {deadline:?}", conn.name))
                }
            }
        })
    }
}

//! The request map: [`SuperpiMcp`], the [`rmcp::ServerHandler`] that turns MCP requests into
//! kernel calls. Transport-free: the stdio transport (`superpi mcp`, [`crate::server`]) and
//! the gateway's Streamable HTTP endpoint serve the same handler.
#![allow(deprecated)] // MCP logging (setLevel) is deprecated only from protocol 2026-07-28 on

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, LoggingLevel, ProtocolVersion,
    ReadResourceResult, ResourceContents,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::Deserialize;
use serde_json::{Value, json};
use superpi_client::sync::lock;
use superpi_client::{ClientError, ConnectOptions, KernelClient, LazyKernel};
use superpi_proto::ToolDef;
use superpi_proto::method::{HarnessInfo, Method, ToolCallParams, ToolCancelParams};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::approval::{self, Approval};
use crate::catalog;
use crate::logging::McpLog;
use crate::tools::{self, KernelToolResult};

/// The newest protocol version `initialize` negotiates: the newest one with the handshake.
/// Older ones down to 2024-11-05 are negotiated as asked.
pub const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The newest revision served: 2026-07-28, without the handshake. Its version and the
/// client's capabilities travel in every request's `_meta`, so a request may reach any server
/// (stdio from the first request, or a stateless HTTP request).
pub const MODERN_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// Whether a request speaks 2026-07-28 or later (its `_meta` names the version).
pub(crate) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| v.as_str() >= MODERN_PROTOCOL.as_str())
}

/// How long a cancelled turn may take to confirm its end before the call gives up on it.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// How soon `tool.cancel` is asked again when the kernel does not know the call yet.
const CANCEL_RETRY: Duration = Duration::from_millis(20);

/// What one MCP server instance works with.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// How to reach the kernel (principal, remote and frontend name included).
    pub connect: ConnectOptions,
    /// The workspace root tools and turns run in (absolute).
    pub workspace: String,
    /// The harness for tools and `harness_task`; the kernel's default when `None`.
    pub harness: Option<String>,
    /// Who answers for calls the kernel would ask about (see [`Approval`]).
    pub approval: Approval,
    /// The mode asked for tools and `harness_task` (the kernel lowers it to the remote
    /// ceiling); the remote default when `None`.
    pub mode: Option<String>,
}

/// The MCP server: one per MCP connection (or HTTP session). Cheap to clone.
#[derive(Clone)]
pub struct SuperpiMcp {
    inner: Arc<Inner>,
}

struct Inner {
    config: McpConfig,
    kernel: LazyKernel,
    tools: Mutex<Option<Vec<ToolDef>>>,
    harnesses: Mutex<Option<Vec<HarnessInfo>>>,
    /// Conversations `harness_task` started on this connection: (id, harness).
    started: Mutex<Vec<(i64, String)>>,
    /// How many conversations `harness_task` started here: `subscriptions/listen` streams
    /// watch it to say that the resource list changed.
    started_count: tokio::sync::watch::Sender<u64>,
    log: McpLog,
    /// Cancelled when the connection's input ended: running turns are cancelled.
    shutdown: CancellationToken,
    /// Tool calls still running, so the process outlives their cancellation at end of input.
    in_flight: TaskTracker,
}

#[derive(Deserialize)]
struct ToolList {
    tools: Vec<ToolDef>,
}

impl SuperpiMcp {
    pub fn new(config: McpConfig) -> Self {
        SuperpiMcp {
            inner: Arc::new(Inner {
                config,
                kernel: LazyKernel::reconnecting(),
                tools: Mutex::new(None),
                harnesses: Mutex::new(None),
                started: Mutex::new(Vec::new()),
                started_count: tokio::sync::watch::Sender::new(0),
                log: McpLog::default(),
                shutdown: CancellationToken::new(),
                in_flight: TaskTracker::new(),
            }),
        }
    }

    pub fn config(&self) -> &McpConfig {
        &self.inner.config
    }

    /// The connection is over (end of input, a closed HTTP session): `harness_task` turns still
    /// running are cancelled in the kernel and their calls end.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// The token [`Self::shutdown`] cancels, for a transport to cancel at end of input.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    /// Runs one `tools/call` as a tracked call, so [`Self::drained`] waits for it.
    pub(crate) async fn tracked<F: Future>(&self, call: F) -> F::Output {
        self.inner.in_flight.track_future(call).await
    }

    /// Waits, at most `CANCEL_GRACE` and a second, for the calls still running when the
    /// connection ended to finish: a call cancelled at end of input must reach the kernel
    /// with its cancel before the process exits, or the turn would run on unwatched.
    pub async fn drained(&self) {
        self.inner.in_flight.close();
        if tokio::time::timeout(CANCEL_GRACE + Duration::from_secs(1), self.inner.in_flight.wait()).await.is_err() {
            tracing::warn!(running = self.inner.in_flight.len(), "tool calls still running at exit");
        }
    }

    /// The conversations `harness_task` started on this connection.
    pub fn started_conversations(&self) -> Vec<(i64, String)> {
        lock(&self.inner.started).clone()
    }

    /// The kernel connection, made on first use and again when the kernel went away.
    async fn kernel(&self) -> Result<KernelClient, ErrorData> {
        let connect = &self.inner.config.connect;
        self.inner
            .kernel
            .get_or_connect(|| async {
                let kernel = KernelClient::connect(connect).await?;
                tracing::debug!(kernel = ?kernel.kernel_hello(), "connected to the kernel");
                Ok(kernel)
            })
            .await
            .map_err(|err: ClientError| {
                ErrorData::internal_error(format!("cannot reach the superpi kernel: {err}"), None)
            })
    }

    async fn tool_defs(&self) -> Result<Vec<ToolDef>, ErrorData> {
        if let Some(tools) = lock(&self.inner.tools).as_ref() {
            return Ok(tools.clone());
        }
        let kernel = self.kernel().await?;
        let value = kernel
            .call("tool.list", json!({ "harness": self.inner.config.harness }))
            .await
            .map_err(|err| tools::kernel_error("tool.list", &err))?;
        let list: ToolList = serde_json::from_value(value)
            .map_err(|err| ErrorData::internal_error(format!("bad tool.list result from the kernel: {err}"), None))?;
        *lock(&self.inner.tools) = Some(list.tools.clone());
        Ok(list.tools)
    }

    async fn harnesses(&self) -> Result<Vec<HarnessInfo>, ErrorData> {
        if let Some(list) = lock(&self.inner.harnesses).as_ref() {
            return Ok(list.clone());
        }
        let kernel = self.kernel().await?;
        let list = kernel.harnesses().await.map_err(|err| tools::kernel_error("harness.list", &err))?;
        *lock(&self.inner.harnesses) = Some(list.clone());
        Ok(list)
    }

    async fn log(&self, context: &RequestContext<RoleServer>, level: LoggingLevel, message: &str, data: Value) {
        self.inner.log.log(&context.peer, &context.id, level, message, data).await;
    }

    /// One kernel tool call through the kernel's policy and sandbox, consented per the
    /// approval setting: `host` consents up front; `elicit` asks the user when the kernel
    /// refused a call it would have asked about, and calls again with the answer.
    async fn call_kernel_tool(
        &self,
        params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let peer = &context.peer;
        let name = params.name.to_string();
        // With the list known, an unknown name needs no trip to the kernel.
        let known = lock(&self.inner.tools).as_ref().map(|tools| tools.iter().any(|t| t.name == name));
        if known == Some(false) {
            return Err(tools::kernel_error(&name, &ClientError::Kernel(unknown_tool(&name))));
        }
        let kernel = self.kernel().await?;
        let arguments = Value::Object(params.arguments.clone().unwrap_or_default());
        let approval = self.inner.config.approval;
        self.log(context, LoggingLevel::Debug, "tool call", json!({"tool": name})).await;
        let mut answer = self.direct_call(&kernel, &name, &arguments, approval.consents(), context).await?;
        let modern = is_modern(context);
        if approval == Approval::Elicit
            && (if modern { approval::can_elicit_inline(context) } else { approval::can_elicit(peer) })
            && let Ok(refused) = &mut answer
            && let Some((reason, risk)) = tools::askable_refusal(refused)
        {
            let question = approval::question(&name, &arguments, &reason, risk.as_deref());
            let allowed = if modern {
                // 2026-07-28 has no server-to-client request: the question goes back as an
                // `input_required` round, and the client repeats this call with the answer.
                // Nothing is kept here, so any server may take the repeated call.
                match approval::inline_answer(params.input_responses.as_ref()) {
                    Some(allowed) => allowed,
                    None => return Ok(approval::input_required(question).into()),
                }
            } else {
                tokio::select! {
                    allowed = approval::elicit(peer, question) => allowed,
                    _ = cancelled(&context.ct, &self.inner.shutdown) => {
                        return Err(ErrorData::internal_error("the request was cancelled", None));
                    }
                }
            };
            let message = if allowed { "tool call allowed by the user" } else { "tool call declined by the user" };
            self.log(context, LoggingLevel::Info, message, json!({"tool": name})).await;
            if allowed {
                answer = self.direct_call(&kernel, &name, &arguments, true, context).await?;
            } else {
                tools::mark_declined(refused);
            }
        }
        match answer {
            Ok(value) => {
                let result: KernelToolResult = serde_json::from_value(value).map_err(|err| {
                    ErrorData::internal_error(format!("bad tool.call result from the kernel: {err}"), None)
                })?;
                if result.is_error {
                    self.log(context, LoggingLevel::Notice, "tool call failed", json!({"tool": name})).await;
                }
                Ok(tools::call_result(result).into())
            }
            Err(err) if tools::is_tool_level_refusal(&err) => {
                self.log(
                    context,
                    LoggingLevel::Notice,
                    "tool call refused",
                    json!({"tool": name, "error": err.to_string()}),
                )
                .await;
                Ok(CallToolResult::error(vec![ContentBlock::text(err.to_string())]).into())
            }
            Err(err) => {
                self.log(
                    context,
                    LoggingLevel::Warning,
                    "tool call error",
                    json!({"tool": name, "error": err.to_string()}),
                )
                .await;
                Err(tools::kernel_error(&name, &err))
            }
        }
    }

    /// One `tool.call`: the kernel's answer, or an error when the request was cancelled (or
    /// the connection ended) first. The call carries a `call_id`, so a cancel kills its process
    /// in the kernel (`tool.cancel`), not just the wait for it.
    async fn direct_call(
        &self,
        kernel: &KernelClient,
        name: &str,
        arguments: &Value,
        consented: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<Result<Value, ClientError>, ErrorData> {
        let call_id = next_call_id();
        let request = Method::ToolCall(ToolCallParams {
            name: name.to_string(),
            arguments: arguments.clone(),
            workspace: Some(self.inner.config.workspace.clone()),
            harness: self.inner.config.harness.clone(),
            mode: self.inner.config.mode.clone(),
            call_id: Some(call_id.clone()),
            consented,
        });
        let call = kernel.request::<Value>(request);
        tokio::pin!(call);
        tokio::select! {
            answer = &mut call => Ok(answer),
            _ = cancelled(&context.ct, &self.inner.shutdown) => {
                self.log(context, LoggingLevel::Info, "tool call cancelled", json!({"tool": name})).await;
                cancel_direct_call(kernel, &call_id, call).await;
                Err(ErrorData::internal_error("the request was cancelled", None))
            }
        }
    }

    async fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let json_text = |value: Value| {
            let text = serde_json::to_string_pretty(&value).unwrap_or_default();
            ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type("application/json")])
        };
        if uri == catalog::CONTEXT_URI {
            let harnesses = self.harnesses().await?;
            let listing = self.workspace_listing().await;
            let doc = catalog::context_document(
                &self.inner.config.workspace,
                self.inner.config.harness.as_deref(),
                &harnesses,
                listing.as_deref(),
            );
            return Ok(json_text(doc));
        }
        if uri == catalog::TOOLS_URI {
            return Ok(json_text(catalog::tools_document(&self.tool_defs().await?)));
        }
        if let Some((conversation_id, after_seq)) = catalog::parse_transcript_uri(uri) {
            let kernel = self.kernel().await?;
            return match transcript(&kernel, conversation_id, after_seq).await {
                Ok((lines, next)) => {
                    let next = next.map(|seq| catalog::transcript_after_uri(conversation_id, seq));
                    Ok(ReadResourceResult::new(vec![catalog::transcript_contents(uri, lines, next)]))
                }
                Err(ClientError::Kernel(e)) if e.code == superpi_proto::message::codes::NOT_FOUND => {
                    Err(ErrorData::resource_not_found(
                        format!("no conversation {conversation_id}"),
                        Some(json!({"uri": uri})),
                    ))
                }
                Err(err) => Err(tools::kernel_error("resources/read", &err)),
            };
        }
        Err(ErrorData::resource_not_found(format!("unknown resource: {uri}"), Some(json!({"uri": uri}))))
    }

    /// The workspace's top-level entries through the harness's listing tool (one that only
    /// reads and lists the names under a path, by its facts; policy and sandbox apply);
    /// `None` when no such tool is offered or it fails.
    async fn workspace_listing(&self) -> Option<String> {
        let tools = self.tool_defs().await.ok()?;
        let (name, path_arg) = tools::listing_tool(&tools)?;
        let kernel = self.kernel().await.ok()?;
        let request = json!({
            "name": name,
            "arguments": {path_arg: "."},
            "workspace": self.inner.config.workspace,
            "harness": self.inner.config.harness,
        });
        let value = kernel.call("tool.call", request).await.ok()?;
        let result: KernelToolResult = serde_json::from_value(value).ok()?;
        match (result.is_error, result.output) {
            (false, Value::String(s)) => Some(s),
            _ => None,
        }
    }
}

/// A `call_id` no other call of this principal uses: the process id and a counter (one process
/// may serve many MCP connections, the gateway's).
fn next_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("mcp-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Kills the running direct call `call_id` in the kernel and waits (at most [`CANCEL_GRACE`])
/// for `call` to answer. The kernel may not have registered the call yet when the cancel
/// arrives (its requests run concurrently): then `tool.cancel` answers false and is asked
/// again until the call is found or has ended.
async fn cancel_direct_call<F: Future>(kernel: &KernelClient, call_id: &str, mut call: Pin<&mut F>) {
    let deadline = tokio::time::Instant::now() + CANCEL_GRACE;
    loop {
        let cancel = Method::ToolCancel(ToolCancelParams { call_id: call_id.to_string() });
        match kernel.request::<Value>(cancel).await {
            Ok(answer) if answer.get("cancelled") == Some(&Value::Bool(true)) => break,
            Ok(_) => {}
            Err(err) => {
                tracing::warn!(call_id, "cancelling the tool call failed: {err}");
                return;
            }
        }
        tokio::select! {
            _ = &mut call => return,
            _ = tokio::time::sleep(CANCEL_RETRY) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(call_id, "the cancelled tool call was never found running");
            return;
        }
    }
    if tokio::time::timeout_at(deadline, call).await.is_err() {
        tracing::warn!(call_id, "the cancelled tool call did not end in time");
    }
}

fn unknown_tool(name: &str) -> superpi_proto::ErrorObject {
    superpi_proto::ErrorObject::new(superpi_proto::message::codes::METHOD_NOT_FOUND, format!("unknown tool `{name}`"))
}

/// Either the request was cancelled or the connection ended.
async fn cancelled(request: &CancellationToken, shutdown: &CancellationToken) {
    tokio::select! {
        _ = request.cancelled() => {}
        _ = shutdown.cancelled() => {}
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[path = "handler.rs"]
mod handler;
#[path = "listen.rs"]
mod listen;
#[path = "task.rs"]
mod task;
#[path = "tasks.rs"]
mod tasks;
pub use handler::server_config;

/// At most this many bytes of transcript lines in one read (at least one line): escaped
/// once more inside the answer, they stay within the 16 MiB line MCP clients read.
const TRANSCRIPT_BYTES: usize = 6 * 1024 * 1024;

/// A part of a conversation's transcript: the lines after `after_seq`, read page by page up to
/// [`TRANSCRIPT_BYTES`], and the seq of its last line when more follow.
async fn transcript(
    kernel: &KernelClient,
    conversation_id: i64,
    after_seq: Option<u64>,
) -> Result<(String, Option<u64>), ClientError> {
    let mut pages = kernel.history_range(conversation_id, after_seq, u64::MAX).await?;
    let mut lines = String::new();
    let mut last = None;
    while let Some(page) = pages.next_page().await? {
        for entry in &page {
            let line = catalog::transcript_line(entry);
            if last.is_some() && lines.len() + line.len() >= TRANSCRIPT_BYTES {
                return Ok((lines, last));
            }
            lines.push_str(&line);
            lines.push('\n');
            last = Some(entry.seq);
        }
    }
    Ok((lines, None))
}

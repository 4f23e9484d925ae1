//! A small MCP server over stdio for the MCP client's end-to-end tests: `echo` (read-only:
//! its text back, also as structured content), `write_file` (no annotation: writes `text` to
//! `path`, relative to its working directory), `read_file` (read-only: a file's text, for
//! the confinement tests), `crash` (read-only: exits during the call), `grow` (read-only:
//! offers one more tool, `extra`, and says so with `notifications/tools/list_changed`) and
//! `big` (read-only: `bytes` bytes of text), `connect` (read-only: opens a TCP connection to
//! 127.0.0.1:`port`, says how that went) and `remember` (read-only: appends `text` to
//! `$HOME/memory.txt` and answers the file). It says `fixture ready` on stderr when it
//! starts, and with `--fail` prints a line on stderr and exits before it speaks MCP.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations, ToolsCapability,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Default)]
struct Fixture {
    grown: AtomicBool,
}

fn schema(properties: Value, required: &[&str]) -> Arc<serde_json::Map<String, Value>> {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

fn read_only() -> ToolAnnotations {
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = Some(true);
    annotations
}

fn text_arg<'a>(request: &'a CallToolRequestParams, name: &str) -> Result<&'a str, ErrorData> {
    request
        .arguments
        .as_ref()
        .and_then(|a| a.get(name))
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params(format!("`{name}` must be a string"), None))
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::default();
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(true);
        capabilities.tools = Some(tools);
        ServerConfig::new(capabilities)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let text = json!({"text": {"type": "string"}});
        let path = json!({"path": {"type": "string"}});
        let write = json!({"path": {"type": "string"}, "text": {"type": "string"}});
        let none = || schema(json!({}), &[]);
        let bytes = json!({"bytes": {"type": "integer"}});
        let mut tools = vec![
            Tool::new("echo", "Says the text back.", schema(text, &["text"])).with_annotations(read_only()),
            Tool::new(
                "env",
                "Says a variable of its environment.",
                schema(json!({"name": {"type": "string"}}), &["name"]),
            )
            .with_annotations(read_only()),
            Tool::new("write_file", "Writes text to a file.", schema(write, &["path", "text"])),
            Tool::new("read_file", "Reads a file.", schema(path, &["path"])).with_annotations(read_only()),
            Tool::new("crash", "Exits during the call.", none()).with_annotations(read_only()),
            Tool::new("grow", "Offers one more tool.", none()).with_annotations(read_only()),
            Tool::new("big", "Answers `bytes` bytes of text.", schema(bytes, &["bytes"])).with_annotations(read_only()),
            Tool::new("connect", "Connects to a local port.", schema(json!({"port": {"type": "integer"}}), &["port"]))
                .with_annotations(read_only()),
            Tool::new(
                "remember",
                "Appends to $HOME/memory.txt.",
                schema(json!({"text": {"type": "string"}}), &["text"]),
            )
            .with_annotations(read_only()),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(Tool::new("extra", "Offered after `grow`.", none()).with_annotations(read_only()));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match request.name.as_ref() {
            "echo" => {
                let text = text_arg(&request, "text")?;
                let mut result = CallToolResult::success(vec![Content::text(format!("echo: {text}"))]);
                result.structured_content = Some(json!({"text": text}));
                result
            }
            "env" => {
                let value = std::env::var(text_arg(&request, "name")?).unwrap_or_else(|_| "(unset)".into());
                CallToolResult::success(vec![Content::text(format!("env: {value}"))])
            }
            "write_file" => match std::fs::write(text_arg(&request, "path")?, text_arg(&request, "text")?) {
                Ok(()) => CallToolResult::success(vec![Content::text("written")]),
                Err(e) => CallToolResult::error(vec![Content::text(format!("cannot write: {e}"))]),
            },
            "read_file" => match std::fs::read_to_string(text_arg(&request, "path")?) {
                Ok(text) => CallToolResult::success(vec![Content::text(text)]),
                Err(e) => CallToolResult::error(vec![Content::text(format!("cannot read: {e}"))]),
            },
            "crash" => {
                eprintln!("fixture: crashing as asked");
                std::process::exit(9);
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![Content::text("grown")])
            }
            "extra" if self.grown.load(Ordering::SeqCst) => CallToolResult::success(vec![Content::text("extra here")]),
            "big" => {
                let bytes = request.arguments.as_ref().and_then(|a| a.get("bytes")).and_then(Value::as_u64);
                let bytes = bytes.ok_or_else(|| ErrorData::invalid_params("`bytes` must be a number", None))?;
                let line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmn\n";
                let text: String = line.chars().cycle().take(bytes as usize).collect();
                CallToolResult::success(vec![Content::text(format!("BEGIN{text}END"))])
            }
            "connect" => {
                let port = request.arguments.as_ref().and_then(|a| a.get("port")).and_then(Value::as_u64).unwrap_or(0);
                let said = match std::net::TcpStream::connect(("127.0.0.1", port as u16)) {
                    Ok(_) => "connected".to_string(),
                    Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => format!("no network: {e}"),
                    Err(e) => format!("network, but: {e}"),
                };
                CallToolResult::success(vec![Content::text(said)])
            }
            "remember" => {
                let home = std::env::var("HOME").unwrap_or_default();
                let file = std::path::Path::new(&home).join("memory.txt");
                let text = text_arg(&request, "text")?;
                let kept = std::fs::read_to_string(&file).unwrap_or_default() + text + "\n";
                match std::fs::write(&file, &kept) {
                    Ok(()) => CallToolResult::success(vec![Content::text(format!("{}: {kept}", file.display()))]),
                    Err(e) => {
                        CallToolResult::error(vec![Content::text(format!("cannot write {}: {e}", file.display()))])
                    }
                }
            }
            other => return Err(ErrorData::invalid_params(format!("no tool `{other}`"), None)),
        };
        Ok(CallToolResponse::from(result))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--fail") {
        eprintln!("fixture: refusing to start (--fail)");
        std::process::exit(3);
    }
    eprintln!("fixture ready");
    let transport = (tokio::io::stdin(), tokio::io::stdout());
    match Fixture::default().serve(transport).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => eprintln!("fixture: {e}"),
    }
}

//! A small MCP server over stdio for the MCP client's end-to-end tests: `echo` (read-only:
//! its text back, also as structured content), `write_file` (no annotation: writes `text` to
//! `path`, relative to its working directory) and `read_file` (read-only: a file's text, for
//! the confinement tests). It says `fixture ready` on stderr when it starts, and with
//! `--fail` prints a line on stderr and exits before it speaks MCP.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations, ToolsCapability,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

struct Fixture;

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
        capabilities.tools = Some(ToolsCapability::default());
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
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("echo", "Says the text back.", schema(text, &["text"])).with_annotations(read_only()),
            Tool::new("write_file", "Writes text to a file.", schema(write, &["path", "text"])),
            Tool::new("read_file", "Reads a file.", schema(path, &["path"])).with_annotations(read_only()),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match request.name.as_ref() {
            "echo" => {
                let text = text_arg(&request, "text")?;
                let mut result = CallToolResult::success(vec![Content::text(format!("echo: {text}"))]);
                result.structured_content = Some(json!({"text": text}));
                result
            }
            "write_file" => match std::fs::write(text_arg(&request, "path")?, text_arg(&request, "text")?) {
                Ok(()) => CallToolResult::success(vec![Content::text("written")]),
                Err(e) => CallToolResult::error(vec![Content::text(format!("cannot write: {e}"))]),
            },
            "read_file" => match std::fs::read_to_string(text_arg(&request, "path")?) {
                Ok(text) => CallToolResult::success(vec![Content::text(text)]),
                Err(e) => CallToolResult::error(vec![Content::text(format!("cannot read: {e}"))]),
            },
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
    match Fixture.serve(transport).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => eprintln!("fixture: {e}"),
    }
}

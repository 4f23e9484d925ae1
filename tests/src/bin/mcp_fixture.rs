//! A small MCP server over stdio for the MCP client's end-to-end tests: `echo` (read-only:
//! its text back, also as structured content), `write_file` (no annotation: writes `text` to
//! `path`, relative to its working directory), `read_file` (read-only: a file's text, for
//! the confinement tests), `crash` (read-only: exits during the call), `grow` (read-only:
//! offers one more tool, `extra`, and says so with `notifications/tools/list_changed`) and
//! `big` (read-only: `bytes` bytes of text), `connect` (read-only: opens a TCP connection to
//! 127.0.0.1:`port`, says how that went) and `remember` (read-only: appends `text` to
//! `$HOME/memory.txt` and answers the file), `header` (read-only: a header of the last HTTP
//! request it was sent, over HTTP+SSE), `ask` (read-only: asks its client a form, region and
//! replicas, by elicitation, or at 2026-07-28 by an `input_required` round, and answers
//! what came back). It says `fixture ready` on stderr when it starts, and
//! with `--fail` prints a line on stderr and exits before it speaks MCP. `--tools N` offers N
//! more tools (`catalog_0`...: a catalog's lookups, for the deferred tools' tests). `--sse`
//! `--legacy` answers `server/discover` with method-not-found, as a 2025 server does. `--sse`
//! serves the older HTTP+SSE transport (2024-11-05) on 127.0.0.1 rather than stdio, printing
//! `listening URL` on stdout: a GET of `/sse` opens the stream whose `endpoint` event names
//! `/message`, where messages are POSTed; a POST to `/sse` (Streamable HTTP) is refused 405.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content, DiscoverRequestMethod,
    DiscoverResult, ElicitRequest, ElicitRequestParams, InputRequest, InputRequests, InputRequiredResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
    ToolsCapability,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Default)]
struct Fixture {
    grown: AtomicBool,
    /// `--tools N`: this many more tools.
    more: usize,
    /// `--legacy`: a server of 2025 that knows no `server/discover` (the client initializes).
    legacy: bool,
}

/// The headers of the last HTTP request (`--sse`), by lowercase name.
static HEADERS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

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

    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        if self.legacy {
            return Err(ErrorData::method_not_found::<DiscoverRequestMethod>());
        }
        Ok(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), self.get_info()))
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
        tools.push(Tool::new("ask", "Asks where to deploy.", none()).with_annotations(read_only()));
        tools.push(
            Tool::new(
                "header",
                "Says a header of the last HTTP request.",
                schema(json!({"name": {"type": "string"}}), &["name"]),
            )
            .with_annotations(read_only()),
        );
        if self.grown.load(Ordering::SeqCst) {
            tools.push(Tool::new("extra", "Offered after `grow`.", none()).with_annotations(read_only()));
        }
        for n in 0..self.more {
            let properties = json!({
                "id": {"type": "string", "description": "The record's identifier, as the catalog prints it"},
                "fields": {"type": "array", "items": {"type": "string"}, "description": "Which fields to answer"},
                "as_of": {"type": "string", "description": "A date (YYYY-MM-DD): the record as it was then"}
            });
            let description = format!(
                "Looks up a record of catalog section {n}: its fields as they are now or were at a date. Answers \
                 the record as JSON, or says that no record has that identifier."
            );
            tools.push(
                Tool::new(format!("catalog_{n}"), description, schema(properties, &["id"]))
                    .with_annotations(read_only()),
            );
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
            "ask" => {
                let schema = json!({"type": "object", "required": ["region", "replicas"], "properties": {
                    "region": {"type": "string", "enum": ["eu", "us"], "title": "Region"},
                    "replicas": {"type": "integer", "minimum": 1, "title": "Replicas"}
                }});
                let requested_schema =
                    serde_json::from_value(schema).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: "Where to deploy?".into(),
                    requested_schema,
                };
                let modern = context.protocol_version() == Some(ProtocolVersion::V_2026_07_28);
                let answer = match &request.input_responses {
                    Some(responses) => responses.get("deploy").cloned().unwrap_or_default(),
                    None if modern => {
                        let requests = InputRequests::from([(
                            "deploy".to_string(),
                            InputRequest::Elicitation(ElicitRequest::new(params)),
                        )]);
                        return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), None)));
                    }
                    None => {
                        let result = context.peer.create_elicitation(params).await;
                        let result = result.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                        serde_json::to_value(result).unwrap_or_default()
                    }
                };
                let how = if modern { "input_required" } else { "elicitation" };
                CallToolResult::success(vec![Content::text(format!("{how}: {answer}"))])
            }
            "header" => {
                let name = text_arg(&request, "name")?.to_ascii_lowercase();
                let headers = HEADERS.lock().unwrap_or_else(|p| p.into_inner());
                let value = headers.iter().find(|(k, _)| *k == name).map_or("(none)", |(_, v)| v.as_str());
                CallToolResult::success(vec![Content::text(format!("header: {value}"))])
            }
            other if other.starts_with("catalog_") => CallToolResult::success(vec![Content::text(format!(
                "{other}: {}",
                Value::from(request.arguments.clone())
            ))]),
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
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--fail") {
        eprintln!("fixture: refusing to start (--fail)");
        std::process::exit(3);
    }
    let more = args.iter().position(|a| a == "--tools").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(0);
    let fixture = Fixture { more, legacy: args.iter().any(|a| a == "--legacy"), ..Fixture::default() };
    eprintln!("fixture ready");
    if args.iter().any(|a| a == "--sse") {
        return sse::serve(fixture).await;
    }
    let transport = (tokio::io::stdin(), tokio::io::stdout());
    match fixture.serve(transport).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => eprintln!("fixture: {e}"),
    }
}

/// The older HTTP+SSE transport, bridged to the server over a pipe of JSON lines.
mod sse {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use rmcp::ServiceExt;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::mpsc;

    type Lines = tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>;
    /// The server's messages, taken by the one open event stream and put back when it ends.
    type Stream = Arc<Mutex<Option<Lines>>>;

    pub async fn serve(fixture: super::Fixture) {
        let (server_end, bridge_end) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = fixture.serve(tokio::io::split(server_end)).await {
                let _ = running.waiting().await;
            }
        });
        let (from_server, mut to_server) = tokio::io::split(bridge_end);
        let from_server: Stream = Arc::new(Mutex::new(Some(tokio::io::BufReader::new(from_server).lines())));
        let (posted, mut to_write) = mpsc::channel::<Vec<u8>>(64);
        tokio::spawn(async move {
            while let Some(mut body) = to_write.recv().await {
                body.push(b'\n');
                if to_server.write_all(&body).await.is_err() {
                    return;
                }
            }
        });
        let Ok(listener) = TcpListener::bind("127.0.0.1:0").await else { return eprintln!("fixture: cannot listen") };
        let Ok(addr) = listener.local_addr() else { return };
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "listening http://{addr}/sse");
        let _ = stdout.flush();
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(connection(stream, from_server.clone(), posted.clone()));
        }
    }

    /// Serves the requests of one connection, one after another.
    async fn connection(mut stream: TcpStream, from_server: Stream, posted: mpsc::Sender<Vec<u8>>) {
        let mut buffer = Vec::new();
        loop {
            let head_end = loop {
                if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                    break at + 4;
                }
                let mut chunk = [0u8; 4096];
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                }
            };
            let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
            let mut lines = head.lines();
            let request_line = lines.next().unwrap_or_default().to_string();
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            let length = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok());
            let length: usize = length.unwrap_or(0);
            while buffer.len() < head_end + length {
                let mut chunk = [0u8; 4096];
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                }
            }
            let body = buffer[head_end..head_end + length].to_vec();
            buffer.drain(..head_end + length);
            let mut words = request_line.split_whitespace();
            let (method, path) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
            let answer: &[u8] = match (method, path) {
                ("GET", "/sse") => return events(stream, from_server).await,
                ("POST", "/message") => {
                    *super::HEADERS.lock().unwrap_or_else(|p| p.into_inner()) = headers;
                    let _ = posted.send(body).await;
                    b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
                }
                _ => b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n",
            };
            if stream.write_all(answer).await.is_err() {
                return;
            }
        }
    }

    /// The event stream: the endpoint, then each message of the server (one stream at a time).
    async fn events(mut stream: TcpStream, from_server: Stream) {
        let taken = from_server.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(mut lines) = taken else {
            let _ = stream.write_all(b"HTTP/1.1 409 Conflict\r\ncontent-length: 0\r\n\r\n").await;
            return;
        };
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";
        if stream.write_all(head.as_bytes()).await.is_ok()
            && stream.write_all(b"event: endpoint\ndata: /message\n\n").await.is_ok()
        {
            while let Ok(Some(line)) = lines.next_line().await {
                if stream.write_all(format!("event: message\ndata: {line}\n\n").as_bytes()).await.is_err() {
                    break;
                }
            }
        }
        *from_server.lock().unwrap_or_else(|p| p.into_inner()) = Some(lines);
    }
}

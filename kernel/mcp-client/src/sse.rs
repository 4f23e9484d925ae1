//! The older HTTP+SSE transport (MCP 2024-11-05), for servers that do not speak Streamable
//! HTTP: a GET opens an SSE stream whose first event, `endpoint`, names where to POST
//! messages; the server's messages come as `message` events on the stream. rmcp has no client
//! for it, so this bridges it to a byte pipe that rmcp reads as newline-delimited JSON (as
//! over stdio): a task posts each line rmcp writes, another writes each `message` event's data
//! as a line. The endpoint must be on the URL's origin (the headers, a token among them, go
//! nowhere else); the stream's end closes the pipe, so the server counts as gone.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long the server has to send its `endpoint` event.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest event kept; a larger one ends the stream.
const MAX_EVENT: usize = 16 << 20;
/// The pipe's buffer between rmcp and the bridge.
const PIPE: usize = 1 << 16;

/// The ends rmcp reads and writes.
pub(crate) type Pipe = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

/// Opens the stream at `url` with `headers`, waits for its endpoint, and starts the bridge.
pub(crate) async fn connect(url: &str, headers: HeaderMap) -> Result<Pipe, String> {
    let base = reqwest::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
    let client = reqwest::Client::new();
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status();
    let is_sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !status.is_success() || !is_sse {
        return Err(format!("GET {url} for an SSE stream answered {status}"));
    }
    let mut events = Events { response, buffer: Vec::new() };
    let endpoint = tokio::time::timeout(ENDPOINT_TIMEOUT, events.next())
        .await
        .map_err(|_| format!("{url} sent no `endpoint` event within {ENDPOINT_TIMEOUT:?}"))?;
    let endpoint = match endpoint {
        Some(event) if event.name == "endpoint" => {
            base.join(event.data.trim()).map_err(|e| format!("endpoint: {e}"))?
        }
        _ => return Err(format!("{url}: the stream's first event is not `endpoint`")),
    };
    if endpoint.origin() != base.origin() {
        return Err(format!("{url}: its endpoint {endpoint} is on another origin"));
    }
    let (ours, theirs) = tokio::io::duplex(PIPE);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    // One writer to rmcp, fed by both tasks; it ends (closing the pipe) when both have.
    let (lines, to_write) = mpsc::channel::<String>(64);
    tokio::spawn(write_lines(to_rmcp, to_write));
    let closed = CancellationToken::new();
    tokio::spawn(relay_events(events, lines.clone(), closed.clone()));
    tokio::spawn(post_lines(client, endpoint, headers, from_rmcp, lines, closed));
    Ok(tokio::io::split(theirs))
}

async fn write_lines(mut to_rmcp: WriteHalf<DuplexStream>, mut lines: mpsc::Receiver<String>) {
    while let Some(line) = lines.recv().await {
        if to_rmcp.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Writes each `message` event's data to rmcp as a line, until the stream or the pipe ends.
async fn relay_events(mut events: Events, to_rmcp: mpsc::Sender<String>, closed: CancellationToken) {
    let _closed = closed.clone().drop_guard();
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = closed.cancelled() => return,
        };
        let Some(event) = event else { return };
        if event.name != "message" {
            continue;
        }
        let line = format!("{}\n", event.data.replace('\n', ""));
        if to_rmcp.send(line).await.is_err() {
            return;
        }
    }
}

/// Posts each line rmcp writes to the endpoint. A request whose POST fails is answered with
/// a JSON-RPC error, so its caller hears at once.
async fn post_lines(
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    from_rmcp: ReadHalf<DuplexStream>,
    to_rmcp: mpsc::Sender<String>,
    closed: CancellationToken,
) {
    let _closed = closed.clone().drop_guard();
    let mut lines = tokio::io::BufReader::new(from_rmcp).lines();
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            _ = closed.cancelled() => return,
        };
        let Ok(Some(line)) = line else { return };
        let posted = client
            .post(endpoint.clone())
            .headers(headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(line.clone())
            .send()
            .await;
        let failed = match posted {
            Ok(response) if response.status().is_success() => continue,
            Ok(response) => format!("POST {endpoint} answered {}", response.status()),
            Err(err) => format!("POST {endpoint}: {err}"),
        };
        tracing::warn!("{failed}");
        let message: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if let (Some(id), Some(_)) = (message.get("id"), message.get("method")) {
            let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": failed}});
            if to_rmcp.send(format!("{error}\n")).await.is_err() {
                return;
            }
        }
    }
}

/// One server-sent event.
#[derive(Debug, PartialEq)]
pub(crate) struct Event {
    pub name: String,
    pub data: String,
}

struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Events {
    /// The next event; `None` when the stream ended, failed or sent one too large.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some((event, used)) = parse_event(&self.buffer) {
                self.buffer.drain(..used);
                match event {
                    Some(event) => return Some(event),
                    None => continue,
                }
            }
            if self.buffer.len() > MAX_EVENT {
                tracing::warn!("an SSE event over {MAX_EVENT} bytes: the stream is closed");
                return None;
            }
            let chunk = self.response.chunk().await.ok()??;
            self.buffer.extend_from_slice(&chunk);
        }
    }
}

/// The first complete event block of `buffer` (an event, or `None` for a block with no data:
/// a comment or a keep-alive) and the bytes it used; `None` while the block is incomplete.
pub(crate) fn parse_event(buffer: &[u8]) -> Option<(Option<Event>, usize)> {
    let find = |sep: &[u8]| buffer.windows(sep.len()).position(|w| w == sep).map(|at| (at, at + sep.len()));
    let (at, used) = [&b"\r\n\r\n"[..], b"\n\n", b"\r\r"].into_iter().filter_map(find).min()?;
    let block = String::from_utf8_lossy(&buffer[..at]);
    let (mut name, mut data, mut any) = ("message".to_string(), Vec::new(), false);
    for line in block.split(['\n', '\r']).filter(|l| !l.is_empty() && !l.starts_with(':')) {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => name = value.to_string(),
            "data" => {
                data.push(value.to_string());
                any = true;
            }
            _ => {}
        }
    }
    Some((any.then(|| Event { name, data: data.join("\n") }), used))
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;

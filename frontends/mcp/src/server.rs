//! The transport, stdio: newline-delimited JSON-RPC on stdin and stdout, as MCP hosts start a
//! local server.
//!
//! rmcp's own stdio transport drops a line that is not JSON without a word; this one answers
//! it with a JSON-RPC parse error (id null) and keeps serving, and answers a well-formed
//! object that is no MCP message with an invalid-request error. One writer task owns stdout,
//! so protocol lines never interleave; nothing else may print there.

use std::borrow::Cow;

use rmcp::ErrorData;
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::Value;
use superpi_client::lines::{Line, LineReader};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The longest line read (16 MiB); a longer one is discarded with a parse error.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("the output stream is closed")]
    Closed,
}

/// A line-delimited JSON-RPC transport for the server side.
pub struct LineTransport<R> {
    /// Lines of at most [`MAX_LINE`] (or `with_max_line`); a longer one is skipped.
    reader: LineReader<R>,
    out: Option<mpsc::UnboundedSender<ServerJsonRpcMessage>>,
    writer: Option<JoinHandle<()>>,
    /// Cancelled at end of input (or a read error).
    eof: CancellationToken,
}

/// The transport over this process's stdin and stdout.
pub fn stdio() -> LineTransport<rmcp::transport::StdioReader> {
    let (reader, writer) = rmcp::transport::stdio_pipes();
    LineTransport::new(reader, writer)
}

impl<R: AsyncRead + Unpin + Send + 'static> LineTransport<R> {
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(reader: R, writer: W) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_loop(writer, rx));
        LineTransport {
            reader: LineReader::new(reader, MAX_LINE),
            out: Some(tx),
            writer: Some(writer),
            eof: CancellationToken::new(),
        }
    }

    pub fn with_max_line(mut self, max_line: usize) -> Self {
        self.reader.set_limit(max_line);
        self
    }

    /// Cancels `token` when the input ends, so the handler can end what still runs.
    pub fn with_eof_token(mut self, token: CancellationToken) -> Self {
        self.eof = token;
        self
    }

    fn reply(&self, message: ServerJsonRpcMessage) {
        if let Some(out) = &self.out {
            let _ = out.send(message);
        }
    }
}

/// What an input line is.
#[derive(Debug)]
pub enum Verdict {
    Message(Box<ClientJsonRpcMessage>),
    /// Not a message: answer this.
    Reply(Box<ServerJsonRpcMessage>),
    /// An unreadable notification: notifications get no answer.
    Ignore,
}

/// Reads one input line as a message, or says how to answer it.
pub fn classify_line(line: &[u8]) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(line);
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(err) => {
            let error = ErrorData::parse_error(format!("parse error: {err}"), None);
            return Verdict::Reply(Box::new(ServerJsonRpcMessage::error(error, None)));
        }
    };
    match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(message) => Verdict::Message(Box::new(message)),
        Err(err) => {
            let raw_id = value.get("id").filter(|id| !id.is_null());
            let id = raw_id.and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
            let has_method = value.get("method").is_some_and(Value::is_string);
            // A request (it has an id) that is no JSON-RPC 2.0 request (another version, an id
            // that is neither a string nor a number): an invalid request, not bad params, and
            // never ignored as a notification would be.
            let v2 = value.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
            if raw_id.is_some() && (!v2 || id.is_none()) {
                return Verdict::Reply(Box::new(ServerJsonRpcMessage::error(
                    ErrorData::invalid_request(format!("invalid request: {err}"), None),
                    id,
                )));
            }
            match (id, has_method) {
                // A request of a known method with bad params.
                (Some(id), true) => Verdict::Reply(Box::new(ServerJsonRpcMessage::error(
                    ErrorData::invalid_params(format!("invalid params: {err}"), None),
                    Some(id),
                ))),
                (None, true) => Verdict::Ignore,
                // A response to nothing we asked, or no message at all.
                (id, false) => Verdict::Reply(Box::new(ServerJsonRpcMessage::error(
                    ErrorData::invalid_request(format!("invalid request: {err}"), None),
                    id,
                ))),
            }
        }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for LineTransport<R> {
    type Error = StdioError;

    fn name() -> Cow<'static, str> {
        "superpi-stdio".into()
    }

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = match &self.out {
            Some(out) => out.send(item).map_err(|_| StdioError::Closed),
            None => Err(StdioError::Closed),
        };
        std::future::ready(sent)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let line = match self.reader.next().await {
                Ok(line) => line,
                Err(err) => {
                    tracing::error!("reading stdin: {err}");
                    self.eof.cancel();
                    return None;
                }
            };
            match line {
                Line::Eof => {
                    self.eof.cancel();
                    return None;
                }
                Line::TooLong { limit } => {
                    tracing::warn!(max = limit, "discarded an input line over the maximum length");
                    self.reply(ServerJsonRpcMessage::error(
                        ErrorData::parse_error(format!("message longer than {limit} bytes"), None),
                        None,
                    ));
                }
                Line::Line(line) => match classify_line(&line) {
                    Verdict::Message(message) => return Some(*message),
                    Verdict::Reply(reply) => {
                        tracing::debug!("answered an unreadable input line ({} bytes)", line.len());
                        self.reply(*reply);
                    }
                    Verdict::Ignore => tracing::debug!("ignored an unreadable notification"),
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.out = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}

/// Writes each message as one line; flushes when no more are queued.
async fn write_loop<W: AsyncWrite + Unpin>(writer: W, mut rx: mpsc::UnboundedReceiver<ServerJsonRpcMessage>) {
    let mut writer = tokio::io::BufWriter::new(writer);
    let mut buf = Vec::with_capacity(4096);
    while let Some(message) = rx.recv().await {
        let mut next = Some(message);
        while let Some(message) = next {
            buf.clear();
            if let Err(err) = serde_json::to_writer(&mut buf, &message) {
                tracing::error!("cannot serialize an outgoing message: {err}");
            } else {
                buf.push(b'\n');
                if writer.write_all(&buf).await.is_err() {
                    return;
                }
            }
            next = rx.try_recv().ok();
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.flush().await;
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;

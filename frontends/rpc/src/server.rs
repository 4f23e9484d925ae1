//! Serving one connection over any byte stream: read lines, run calls, write answers.
//!
//! A connection's lines are handled in the order they come, each finished before the next
//! is read, so a client may pipeline dependent calls (open, then watch) without waiting. The
//! calls of a batch run in order too, and the batch is answered as one line.

use std::sync::Arc;

use jsonrpsee::RpcModule;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

use crate::conn::{Conn, MAX_QUEUED, Outbox, Queued, Shared};
use crate::envelope::{self, Incoming, Item, RpcError, codes};
use crate::request;
use superpi_client::lines::{Line, LineReader};

/// Serves one client until it closes its side (then answers what is in flight) or the
/// kernel connection is lost.
pub async fn serve<R, W>(reader: R, writer: W, shared: Arc<Shared>, max_line: usize) -> Result<(), crate::Error>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, out_rx, queued) = Outbox::new();
    let writer = tokio::spawn(write_loop(writer, out_rx, queued));
    let conn = Conn::new(shared, out.clone());
    let module = Arc::new(request::module(conn.clone())?);
    let mut lines = LineReader::new(reader, max_line);
    let lost = conn.lost.clone();

    loop {
        // A client that does not read its answers is not read either: its answers stay bounded.
        out.wait_for_room(MAX_QUEUED).await;
        let line = tokio::select! {
            line = lines.next() => line,
            _ = lost.notified() => {
                tracing::warn!("ending the client connection: the kernel connection is lost");
                conn.end_watches("the kernel connection was lost");
                break;
            }
        };
        let line = match line {
            Ok(Line::Line(line)) => line,
            Ok(Line::TooLong { limit }) => {
                let error =
                    RpcError::new(codes::INVALID_REQUEST, format!("invalid request: a line over {limit} bytes"))
                        .with_data(serde_json::json!({"limit": limit}));
                conn.send_line(envelope::to_line(&envelope::reject(&error)));
                continue;
            }
            Ok(Line::Eof) => break,
            Err(err) => {
                tracing::debug!("reading from the client: {err}");
                break;
            }
        };
        let incoming = envelope::parse_line(&line);
        drop(line);
        answer(&module, &conn, incoming).await;
    }
    // The client closed its side (everything it asked is answered): end its watches.
    conn.shutdown();
    drop(module);
    drop(conn);
    drop(out);
    writer.await.map_err(|err| crate::Error::Setup(err.to_string()))?;
    Ok(())
}

/// Runs a line's calls and writes its answer (none for notifications only).
async fn answer(module: &RpcModule<Conn>, conn: &Arc<Conn>, incoming: Incoming) {
    let (responses, watches) = match incoming {
        Incoming::Reject(error) => {
            conn.send_line(envelope::to_line(&envelope::reject(&error)));
            return;
        }
        Incoming::Single(item) => {
            let (response, watch) = run_item(module, item).await;
            if let Some(response) = response {
                conn.send_line(envelope::to_line(&response));
            }
            (None, watch.into_iter().collect::<Vec<_>>())
        }
        Incoming::Batch(items) => {
            let mut responses = Vec::new();
            let mut watches = Vec::new();
            for item in items {
                let (response, watch) = run_item(module, item).await;
                responses.extend(response);
                watches.extend(watch);
            }
            (Some(responses), watches)
        }
    };
    if let Some(responses) = responses.filter(|r| !r.is_empty()) {
        conn.send_line(envelope::to_line(&Value::Array(responses)));
    }
    // A watch's events go out only after the answer that names it.
    for watch in watches {
        conn.start_watch(watch);
    }
}

/// One item's response (none for a notification) and the watch it opened, if any.
async fn run_item(module: &RpcModule<Conn>, item: Item) -> (Option<Value>, Option<u64>) {
    match item {
        Item::Invalid { id, error } => (Some(envelope::response(&id, &Err(error))), None),
        Item::Call(call) => {
            let outcome = request::dispatch(module, &call).await;
            let watch = match (&outcome, call.method.as_str()) {
                (Ok(result), "session.watch") => result.get("watch").and_then(Value::as_u64),
                _ => None,
            };
            (call.id.map(|id| envelope::response(&id, &outcome)), watch)
        }
    }
}

/// Writes lines as they come and flushes when none is waiting, so bursts share a write.
async fn write_loop<W: AsyncWrite + Unpin>(writer: W, mut rx: mpsc::UnboundedReceiver<Vec<u8>>, queued: Arc<Queued>) {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(line) = rx.recv().await {
        let written = writer.write_all(&line).await;
        queued.written(line.len());
        if written.is_err() {
            return;
        }
        while let Ok(line) = rx.try_recv() {
            let written = writer.write_all(&line).await;
            queued.written(line.len());
            if written.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;

//! Serving one connection over any byte stream: read lines, run calls, write answers.
//!
//! Calls of a connection run concurrently (answers may come in any order; match them by id),
//! except `auth.login`: the server finishes it before it reads the next line, so a client may
//! send its login and its first calls without waiting. A batch is answered as one line once
//! all its calls are done.

use std::sync::Arc;

use futures::future::join_all;
use jsonrpsee::RpcModule;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::conn::{Conn, Shared};
use crate::envelope::{self, Call, Incoming, Item, RpcError, codes};
use crate::lines::{Line, LineReader};
use crate::methods;

/// Calls of one connection running at once; the reader waits beyond that.
const MAX_IN_FLIGHT: usize = 64;

/// Serves one client until it closes its side (then answers what is in flight) or the
/// kernel connection is lost.
pub async fn serve<R, W>(reader: R, writer: W, shared: Arc<Shared>, max_line: usize) -> Result<(), crate::Error>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(write_loop(writer, out_rx));
    let conn = Conn::new(shared, out);
    let module = Arc::new(methods::module(conn.clone())?);
    let mut lines = LineReader::new(reader, max_line);
    let mut tasks = JoinSet::new();
    let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let lost = conn.lost.clone();

    loop {
        let line = tokio::select! {
            line = lines.next() => line,
            _ = lost.notified() => {
                tracing::warn!("ending the client connection: the kernel connection is lost");
                conn.end_watches("the kernel connection was lost");
                break;
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
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
        if has_login(&incoming) {
            answer(&module, &conn, incoming).await;
            continue;
        }
        let Ok(permit) = permits.clone().acquire_owned().await else { break };
        let (module, conn) = (module.clone(), conn.clone());
        tasks.spawn(async move {
            answer(&module, &conn, incoming).await;
            drop(permit);
        });
    }
    // The client closed its side: answer what it asked, then end its watches.
    while tasks.join_next().await.is_some() {}
    conn.shutdown();
    drop(module);
    drop(conn);
    writer.await.map_err(|err| crate::Error::Setup(err.to_string()))?;
    Ok(())
}

fn has_login(incoming: &Incoming) -> bool {
    let is_login = |item: &Item| matches!(item, Item::Call(Call { method, .. }) if method == "auth.login");
    match incoming {
        Incoming::Single(item) => is_login(item),
        Incoming::Batch(items) => items.iter().any(is_login),
        Incoming::Reject(_) => false,
    }
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
            let answers = join_all(items.into_iter().map(|item| run_item(module, item))).await;
            let mut responses = Vec::new();
            let mut watches = Vec::new();
            for (response, watch) in answers {
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
            let outcome = methods::dispatch(module, &call).await;
            let watch = match (&outcome, call.method.as_str()) {
                (Ok(result), "session.watch") => result.get("watch").and_then(Value::as_u64),
                _ => None,
            };
            (call.id.map(|id| envelope::response(&id, &outcome)), watch)
        }
    }
}

/// Writes lines as they come and flushes when none is waiting, so bursts share a write.
async fn write_loop<W: AsyncWrite + Unpin>(writer: W, mut rx: mpsc::UnboundedReceiver<Vec<u8>>) {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(line) = rx.recv().await {
        if writer.write_all(&line).await.is_err() {
            return;
        }
        while let Ok(line) = rx.try_recv() {
            if writer.write_all(&line).await.is_err() {
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

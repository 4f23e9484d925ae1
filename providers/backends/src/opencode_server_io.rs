//! The pipes and the bus of OpenCode's server: its event stream read to its end, the last
//! words of a server that stopped, and its password.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use superpi_providers::sse::{SseDecoder, SseEvent};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::{Routes, STDERR_END_WAIT, STDERR_TAIL, lock};
use crate::opencode;

/// Reads the server's bus to its end, handing each event to its session's turn. When it
/// ends the server is gone: every turn on it hears so.
pub(super) async fn read_bus(
    mut bus: reqwest::Response,
    routes: Arc<Mutex<Routes>>,
    stderr: Arc<Mutex<String>>,
    stderr_ended: tokio::task::JoinHandle<()>,
) {
    let mut decoder = SseDecoder::new();
    let mut decoded: Vec<SseEvent> = Vec::new();
    let end = loop {
        let chunk = match bus.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break "OpenCode's server stopped".to_string(),
            Err(err) => break format!("OpenCode's server stopped ({err})"),
        };
        if decoder.feed(&chunk, &mut decoded).is_err() {
            break "OpenCode's event stream sent an over-long line".to_string();
        }
        for sse in decoded.drain(..) {
            let Ok(event) = serde_json::from_str::<Value>(&sse.data) else { continue };
            let tx = {
                let mut routes = lock(&routes);
                if let Some((child, parent)) = opencode::created_child(&event)
                    && let Some(tx) = routes.turns.get(parent).cloned()
                {
                    routes.turns.insert(child.to_string(), tx);
                }
                opencode::session_of(&event).and_then(|s| routes.turns.get(s).cloned())
            };
            if let Some(tx) = tx {
                // A turn that went away misses nothing it needs.
                let _ = tx.send(event).await;
            }
        }
    };
    // A dying server's last words: its stderr to its end (bounded, as a child it left may keep
    // the pipe open).
    let _ = tokio::time::timeout(STDERR_END_WAIT, stderr_ended).await;
    let why = stopped(&end, &stderr);
    let mut routes = lock(&routes);
    routes.stopped = Some(why);
    routes.turns.clear();
}

pub(super) fn stopped(what: &str, stderr: &Mutex<String>) -> String {
    let tail = lock(stderr).trim().to_string();
    if tail.is_empty() { what.to_string() } else { format!("{what}; its last output: {tail}") }
}

/// The server's password: 32 random bytes as hex.
pub(super) fn password() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("a password for OpenCode's server: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Keeps the last bytes of the server's stderr.
pub(super) async fn keep_tail(mut stream: pipe::Receiver, tail: Arc<Mutex<String>>) {
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut kept = lock(&tail);
        kept.push_str(&String::from_utf8_lossy(&buf[..n]));
        if kept.len() > STDERR_TAIL {
            let cut = kept.len() - STDERR_TAIL;
            let cut = (cut..kept.len()).find(|i| kept.is_char_boundary(*i)).unwrap_or(kept.len());
            kept.drain(..cut);
        }
    }
}

/// Reads what the server prints after it listens, so it never blocks on a full pipe.
pub(super) async fn drain(mut stream: pipe::Receiver) {
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}

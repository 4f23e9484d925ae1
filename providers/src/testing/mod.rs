//! Test support (feature `testing`): local HTTP/1.1 servers on 127.0.0.1 and the recorded
//! streams of `providers/tests/recorded/`.
//!
//! - [`fakes`]: OpenAI, Anthropic and Gemini servers that check every request against the
//!   vendor's documented rules ([`rules`]), answer a broken one with the vendor's own error
//!   status and body, and a valid one with a scripted answer ([`answers`]) in the vendor's
//!   stream format. Tests point the provider (or a kernel) at them and fail on a broken rule.
//! - [`ReplayServer`]: replays scripted bytes, one reply per connection, checking nothing.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

pub mod answers;
pub mod fakes;
mod prompt_cache;
pub mod rules;

/// The path of a recorded stream (`openai_text.sse`, `anthropic_tools.sse`, `gemini_tools.sse`, ...).
pub fn recorded_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/recorded").join(name)
}

/// The bytes of a recorded stream.
pub fn recorded(name: &str) -> std::io::Result<Vec<u8>> {
    std::fs::read(recorded_path(name))
}

/// One scripted answer.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Written one by one as chunked-encoding chunks, each flushed.
    pub chunks: Vec<Vec<u8>>,
    /// Close the connection without the final chunk (a cut stream).
    pub cut: bool,
    /// Keep the connection open after the chunks until the client goes away.
    pub hold: bool,
}

impl Reply {
    /// A 200 event stream of `body`, split into pieces of `piece` bytes.
    pub fn stream(body: &[u8], piece: usize) -> Self {
        Reply { status: 200, chunks: body.chunks(piece.max(1)).map(<[u8]>::to_vec).collect(), ..Default::default() }
    }

    pub fn error(status: u16, body: &str) -> Self {
        Reply { status, chunks: vec![body.as_bytes().to_vec()], ..Default::default() }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }
}

/// A server that answers connections with scripted replies, in order, whatever they ask.
/// [`fakes`] has servers that check each request against the vendor's rules first.
pub struct ReplayServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// Notified when a held connection is closed by the client.
    pub client_gone: Arc<Notify>,
}

impl ReplayServer {
    /// Listens on 127.0.0.1 and answers the next connections with `replies`, in order.
    pub async fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let client_gone = Arc::new(Notify::new());
        let (seen, gone) = (requests.clone(), client_gone.clone());
        tokio::spawn(async move {
            for reply in replies {
                let Ok((socket, _)) = listener.accept().await else { return };
                serve(socket, reply, &seen, &gone).await;
            }
        });
        Ok(ReplayServer { base, requests, client_gone })
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, seen: &Mutex<Vec<Recorded>>, gone: &Notify) {
    let Some(request) = read_request(&mut socket).await else { return };
    seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(request);
    write_reply(&mut socket, &reply, gone).await;
}

/// Reads one HTTP/1.1 request (head and a `content-length` body); `None` if the client left.
pub(crate) async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or("").split(' ');
    let method = request_line.next().unwrap_or("").to_string();
    let path = request_line.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    while buf.len() < head_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = buf[head_end..head_end + length].to_vec();
    Some(Recorded { method, path, headers, body })
}

/// Writes `reply`: a 200 as a chunked event stream, any other status as a JSON body.
pub(crate) async fn write_reply(socket: &mut TcpStream, reply: &Reply, gone: &Notify) {
    let mut head = format!("HTTP/1.1 {} Scripted\r\nconnection: close\r\n", reply.status);
    let streaming = reply.status == 200;
    let has_type = reply.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
    if streaming {
        if !has_type {
            head.push_str("content-type: text/event-stream\r\n");
        }
        head.push_str("transfer-encoding: chunked\r\n");
    } else {
        let length: usize = reply.chunks.iter().map(Vec::len).sum();
        if !has_type {
            head.push_str("content-type: application/json\r\n");
        }
        head.push_str(&format!("content-length: {length}\r\n"));
    }
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for piece in &reply.chunks {
        let framed = if streaming {
            let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
            framed.extend_from_slice(piece);
            framed.extend_from_slice(b"\r\n");
            framed
        } else {
            piece.clone()
        };
        if socket.write_all(&framed).await.is_err() || socket.flush().await.is_err() {
            return;
        }
    }
    if reply.hold {
        // Wait for the client to close its side: a read of 0 bytes (or an error).
        let mut probe = [0u8; 64];
        loop {
            match socket.read(&mut probe).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        gone.notify_one();
        return;
    }
    if streaming && !reply.cut {
        let _ = socket.write_all(b"0\r\n\r\n").await;
    }
    let _ = socket.shutdown().await;
}

//! The loopback redirect of `superpi mcp login` (RFC 8252 §7.3): a listener on 127.0.0.1
//! that the browser is sent back to with the authorization response. It answers the one
//! request at `/callback` (any other path, a favicon, gets a 404) and hands over its URL.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::OAuthError;

/// The longest request head read.
const HEAD_LIMIT: usize = 16 * 1024;

pub struct Redirect {
    listener: TcpListener,
    port: u16,
}

impl Redirect {
    /// Listens on 127.0.0.1 at `port`, or at any free port.
    pub async fn bind(port: Option<u16>) -> Result<Redirect, OAuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| OAuthError::Redirect(format!("listening on 127.0.0.1: {e}")))?;
        let port = listener.local_addr().map_err(|e| OAuthError::Redirect(e.to_string()))?.port();
        Ok(Redirect { listener, port })
    }

    /// The redirect URI registered and sent with the authorization request.
    pub fn uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// The URL of the first request to `/callback` within `patience`.
    pub async fn wait(&self, patience: Duration) -> Result<String, OAuthError> {
        let waiting = async {
            loop {
                let Ok((mut stream, _)) = self.listener.accept().await else { continue };
                let Some(target) = request_target(&mut stream).await else { continue };
                let ours = target.split('?').next() == Some("/callback");
                let (status, body) = match ours {
                    true => ("200 OK", "superpi has the authorization; you may close this tab."),
                    false => ("404 Not Found", "not here"),
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
                if ours {
                    return format!("http://127.0.0.1:{}{target}", self.port);
                }
            }
        };
        tokio::time::timeout(patience, waiting)
            .await
            .map_err(|_| OAuthError::Redirect(format!("no browser came back within {patience:?}")))
    }
}

/// The target of a GET request's line, once its head is read.
async fn request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await.ok()?.ok()?;
        if n == 0 || head.len() + n > HEAD_LIMIT {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head).lines().next()?.to_string();
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Some(target.to_string()),
        _ => None,
    }
}

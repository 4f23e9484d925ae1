//! Who may reach an HTTP frontend at all, before any route runs: the peer of each connection
//! (superpi-client's [`peer`] check, the one `superpi rpc` uses) and the `Host` of each request.
//!
//! Without tokens, a connection is served only from this user's processes on loopback, never
//! from a kernel's confined tool (a tool granted network would otherwise act as the user's
//! principal and answer its own questions); with tokens, any user and host may connect (the
//! token is the guard), but a confined tool still may not. And without tokens a request must
//! name the server by a loopback name or the bound address in `Host`: a page whose own DNS
//! name was rebound to 127.0.0.1 sends its name, and GETs carry no Origin to refuse it by.

use std::net::{IpAddr, SocketAddr};

use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::HOST;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use superpi_client::peer::{self, Admit};
use tokio::net::{TcpListener, TcpStream};

/// A listener that hands on only the connections whose peer passes the check.
pub struct PeerChecked {
    listener: TcpListener,
    admit: Admit,
}

impl PeerChecked {
    pub fn new(listener: TcpListener, tokens_enabled: bool) -> Self {
        let admit = if tokens_enabled { Admit::AnyUser } else { Admit::ThisUser };
        PeerChecked { listener, admit }
    }
}

impl axum::serve::Listener for PeerChecked {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            let (stream, from) = axum::serve::Listener::accept(&mut self.listener).await;
            let Ok(local) = stream.local_addr() else { continue };
            let admit = self.admit;
            // /proc is read off the runtime's threads.
            let checked = tokio::task::spawn_blocking(move || peer::check_tcp(local, from, admit))
                .await
                .unwrap_or_else(|e| Err(peer::PeerRefused::Unknown(e.to_string())));
            match checked {
                Ok(()) => return (stream, from),
                Err(refused) => tracing::warn!(%from, "refused a connection: {refused}"),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// Whether a request naming `host` (the `Host` header: a name or address, maybe a port) may be
/// served by a listener without tokens bound to `bound`: loopback names and addresses, and the
/// bound address itself.
pub fn host_allowed(host: &str, bound: IpAddr) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((name, tail)) if tail.is_empty() || tail.strip_prefix(':').is_some_and(is_port) => name,
            _ => return false,
        },
        None => match host.split_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return false,
            None => host,
        },
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback() || ip == bound)
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit())
}

/// The `Host` rule as a middleware (see [`host_allowed`]); with tokens every host passes. A
/// request without `Host` (HTTP/1.0 programs; browsers always send one) passes.
pub async fn check_host(tokens_enabled: bool, bound: IpAddr, request: Request, next: Next) -> Response {
    let host = request.headers().get(HOST).map(|h| h.to_str().map(|h| host_allowed(h, bound)).unwrap_or(false));
    if tokens_enabled || host.unwrap_or(true) {
        return next.run(request).await;
    }
    (
        StatusCode::MISDIRECTED_REQUEST,
        "this server answers only to a loopback name or its address in Host unless a token is configured\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_the_bound_address_pass() {
        let v4: IpAddr = "127.0.0.1".parse().unwrap();
        for ok in ["localhost", "LOCALHOST:4000", "127.0.0.1:4000", "127.0.0.2", "[::1]:4000", "[::1]"] {
            assert!(host_allowed(ok, v4), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:4000",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "10.0.0.1:4000",
            "[::1].evil:4000",
            "localhost:",
            "localhost:4000:1",
            "",
        ] {
            assert!(!host_allowed(bad, v4), "{bad}");
        }
        let bound: IpAddr = "192.168.1.7".parse().unwrap();
        assert!(host_allowed("192.168.1.7:4000", bound));
        assert!(!host_allowed("192.168.1.8:4000", bound));
    }
}

//! CORS for browser clients the Origin rule admits (loopback pages, configured origins, and any
//! origin once tokens guard the gateway): preflights answered, answers readable.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::ORIGIN;
use axum::middleware::Next;
use axum::response::Response;
use superpi_http::{Cors, Frontend};

const CORS: Cors = Cors {
    allow_methods: "GET, POST, DELETE, OPTIONS",
    allow_headers: "authorization, content-type, accept, x-session-id, x-conversation-id, x-superpi-mode, \
                    x-super-pi-mode, mcp-session-id, mcp-protocol-version, last-event-id, x-api-key, anthropic-version, \
                    anthropic-beta, anthropic-dangerous-direct-browser-access",
    expose_headers: Some("x-superpi-conversation-id, x-session-id, mcp-session-id"),
};

/// Adds CORS headers for an admitted `Origin` and answers its preflights. A request with a
/// refused Origin passes through untouched: the routes answer it with 403.
pub async fn layer(State(frontend): State<Arc<Frontend>>, request: Request, next: Next) -> Response {
    match request.headers().get(ORIGIN).cloned() {
        Some(origin) if frontend.request_origin_allowed(request.headers()) => CORS.run(origin, request, next).await,
        _ => next.run(request).await,
    }
}

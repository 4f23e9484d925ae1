//! CORS for browser clients the Origin rule admits (loopback pages, configured origins, and any
//! origin once tokens guard the gateway): preflights answered, answers readable.

use axum::extract::{Request, State};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ORIGIN, VARY,
};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::server::Gateway;

const ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";
const ALLOW_HEADERS: &str = "authorization, content-type, accept, x-session-id, x-conversation-id, x-superpi-mode, \
                             x-super-pi-mode, mcp-session-id, mcp-protocol-version, last-event-id";
const EXPOSE_HEADERS: &str = "x-superpi-conversation-id, x-session-id, mcp-session-id";

/// Adds CORS headers for an admitted `Origin` and answers its preflights. A request with a
/// refused Origin passes through untouched: the routes answer it with 403.
pub async fn layer(State(gw): State<Gateway>, request: Request, next: Next) -> Response {
    let origin = request.headers().get(ORIGIN).cloned();
    let admitted = origin.as_ref().and_then(|o| o.to_str().ok()).is_some_and(|o| gw.origin_admitted(o));
    if !admitted {
        return next.run(request).await;
    }
    let Some(origin) = origin else { return next.run(request).await };
    let mut response = if request.method() == Method::OPTIONS {
        let mut preflight = StatusCode::NO_CONTENT.into_response();
        let headers = preflight.headers_mut();
        headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(ALLOW_METHODS));
        headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(ALLOW_HEADERS));
        headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
        preflight
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE_HEADERS));
    headers.append(VARY, HeaderValue::from_static("origin"));
    response
}

//! Browsers: CORS for the origins allowed, and a refusal for the others.
//!
//! With no token configured, anything that can reach the port can run the agent, and a web
//! page from anywhere can make the browser post to a loopback port (a "simple" request needs
//! no preflight). So without tokens only loopback origins pass; a request that names another
//! origin gets 403. With tokens a page must hold one, so any origin may ask. Requests without
//! an `Origin` header (curl, servers, Node) are not from a browser page and pass.

use axum::extract::{Request, State};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_MAX_AGE,
    ORIGIN, VARY,
};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::request::ApiError;

/// Whether an `Origin` value is a page served from this machine.
pub fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((host, tail)) if tail.is_empty() || tail.starts_with(':') => host,
            _ => return false,
        }
    } else {
        match rest.split_once(':') {
            Some((host, port)) if !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) => host,
            Some(_) => return false,
            None => rest,
        }
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The middleware: `tokens_on` says whether bearer tokens are configured.
pub async fn guard(State(tokens_on): State<bool>, request: Request, next: Next) -> Response {
    let Some(origin) = request.headers().get(ORIGIN).cloned() else {
        return next.run(request).await;
    };
    let allowed = tokens_on || origin.to_str().is_ok_and(is_loopback_origin);
    if !allowed {
        return ApiError::new(
            403,
            "forbidden_origin",
            "a page from another origin may not use this server without a token (set SUPERPI_GATEWAY_TOKEN or gateway.json)",
        )
        .into_response();
    }
    let mut response = if request.method() == Method::OPTIONS {
        let mut preflight = StatusCode::NO_CONTENT.into_response();
        let headers = preflight.headers_mut();
        headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, OPTIONS"));
        headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("authorization, content-type, accept"));
        headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
        preflight
    } else {
        next.run(request).await
    };
    response.headers_mut().insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    response.headers_mut().append(VARY, HeaderValue::from_static("Origin"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins() {
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://LOCALHOST:8443",
            "http://127.0.0.1:5173",
            "http://127.1.2.3",
            "http://[::1]:3000",
            "http://[::1]",
        ] {
            assert!(is_loopback_origin(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example:80",
            "http://localhost:3000@evil.example",
            "http://[::1].evil",
            "null",
            "file://",
            "http://10.0.0.1:3000",
            "http://localhost:",
        ] {
            assert!(!is_loopback_origin(bad), "{bad}");
        }
    }
}

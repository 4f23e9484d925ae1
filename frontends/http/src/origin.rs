//! Browsers: the Origin rule for listeners without a token, and CORS for the origins it admits.
//!
//! With no token configured, anything that can reach the port can run the agent, and a web
//! page from anywhere can make the browser post to a loopback port (a "simple" request needs
//! no preflight, and DNS rebinding can name 127.0.0.1). So without tokens only loopback origins
//! and the configured extra ones pass. With tokens a page must hold one, so any origin may ask.
//! Requests without an `Origin` header (curl, servers, Node) are not from a browser page.

use axum::extract::Request;
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, VARY,
};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The environment variable with extra browser origins allowed without a token
/// (comma-separated, exact `scheme://host:port`).
pub const ORIGINS_VAR: &str = "SUPERPI_GATEWAY_ORIGINS";

/// Whether a request with this `Origin` may be served. With tokens configured the token is the
/// guard; without, only requests with no Origin (programs), loopback origins and the configured
/// extra ones pass.
pub fn origin_allowed(origin: Option<&str>, tokens_enabled: bool, extra: &[String]) -> bool {
    let Some(origin) = origin else { return true };
    tokens_enabled || extra.iter().any(|o| o == origin) || is_loopback_origin(origin)
}

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

/// What a frontend allows a browser page: the methods and request headers of its routes, and
/// the response headers a page may read.
#[derive(Debug, Clone, Copy)]
pub struct Cors {
    pub allow_methods: &'static str,
    pub allow_headers: &'static str,
    pub expose_headers: Option<&'static str>,
}

impl Cors {
    /// Runs a request from an admitted `origin`: answers its preflight (`OPTIONS`) or runs it,
    /// and makes the answer readable by that origin.
    pub async fn run(&self, origin: HeaderValue, request: Request, next: Next) -> Response {
        let mut response = if request.method() == Method::OPTIONS {
            let mut preflight = StatusCode::NO_CONTENT.into_response();
            let headers = preflight.headers_mut();
            headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(self.allow_methods));
            headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(self.allow_headers));
            headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
            preflight
        } else {
            next.run(request).await
        };
        let headers = response.headers_mut();
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        if let Some(expose) = self.expose_headers {
            headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(expose));
        }
        headers.append(VARY, HeaderValue::from_static("origin"));
        response
    }
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

    #[test]
    fn origins() {
        let none: &[String] = &[];
        assert!(origin_allowed(None, false, none));
        for ok in ["http://localhost:3000", "http://127.0.0.1", "https://[::1]:8443", "http://127.1.2.3:9"] {
            assert!(origin_allowed(Some(ok), false, none), "{ok}");
        }
        for bad in ["https://evil.example", "http://localhost.evil.example", "null", "file://x", "http://10.0.0.1"] {
            assert!(!origin_allowed(Some(bad), false, none), "{bad}");
        }
        assert!(origin_allowed(Some("https://evil.example"), true, none));
        assert!(origin_allowed(Some("https://app.example"), false, &["https://app.example".to_string()]));
    }
}

//! Browsers: a page from an origin the Origin rule refuses gets 403 in this frontend's error
//! shape; an admitted one gets CORS (superpi-http's [`Cors`]). The rule itself (loopback pages,
//! configured origins, any origin once tokens guard the server) is superpi-http's.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::ORIGIN;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use superpi_http::{Cors, Frontend};

use crate::request::ApiError;

const CORS: Cors = Cors {
    allow_methods: "GET, POST, OPTIONS",
    allow_headers: "authorization, content-type, accept",
    expose_headers: None,
};

/// The middleware.
pub async fn guard(State(frontend): State<Arc<Frontend>>, request: Request, next: Next) -> Response {
    let Some(origin) = request.headers().get(ORIGIN).cloned() else {
        return next.run(request).await;
    };
    if !frontend.request_origin_allowed(request.headers()) {
        return ApiError::forbidden_origin(
            "a page from another origin may not use this server without a token (set SUPERPI_GATEWAY_TOKEN or gateway.json)",
        )
        .into_response();
    }
    CORS.run(origin, request, next).await
}

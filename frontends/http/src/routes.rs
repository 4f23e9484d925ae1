//! The routes every HTTP frontend has around its own, so that each router only names its
//! protocol's routes.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

use crate::error::{ApiError, ErrorShape};

/// What a frontend's router needs besides its routes.
pub struct Common {
    /// The `service` its health answer names.
    pub service: &'static str,
    /// The message of its 404 (which routes it does serve).
    pub not_found: &'static str,
    /// The largest request body it reads, in bytes.
    pub body_limit: usize,
}

/// `routes` with `/` and `/health` (the service's name and version), a 404 for an unknown
/// route and a 405 for a wrong method in the frontend's error shape `S`, and the body limit.
/// Layers added after this apply to all of them.
pub fn with_common<S: ErrorShape + 'static, St: Clone + Send + Sync + 'static>(
    routes: Router<St>,
    common: Common,
) -> Router<St> {
    let Common { service, not_found, body_limit } = common;
    let health = move || async move {
        axum::Json(json!({"status": "ok", "service": service, "version": env!("CARGO_PKG_VERSION")}))
    };
    routes
        .route("/", get(health))
        .route("/health", get(health))
        .fallback(move || async move { ApiError::<S>::not_found(not_found).into_response() })
        .method_not_allowed_fallback(|| async { ApiError::<S>::method_not_allowed().into_response() })
        .layer(DefaultBodyLimit::max(body_limit))
}

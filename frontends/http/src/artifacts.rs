//! The artifact download route both HTTP frontends serve, `GET /v1/artifacts/{id}/{name}`:
//! the bytes of a file a turn's `artifact` tool wrote, to the conversation's principal only.
//! The frontend authenticates the request as it does its other routes; the kernel, reached
//! through that principal's connection, answers another principal's conversation like a
//! missing one, so both are the same 404 here.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use crate::error::{ApiError, ErrorShape};
use crate::frontend::Frontend;

/// The route's path, in axum's syntax.
pub const ARTIFACT_ROUTE: &str = "/v1/artifacts/{conversation}/{name}";

/// The path of one artifact's download (what an AG-UI link or a person's client requests).
pub fn artifact_path(conversation: i64, name: &str) -> String {
    format!("/v1/artifacts/{conversation}/{name}")
}

/// The download of one artifact for `principal`: its bytes as an attachment, or a 404 in the
/// frontend's error shape `S`.
pub async fn artifact_download<S: ErrorShape>(
    frontend: &Frontend,
    principal: &str,
    conversation: &str,
    name: &str,
) -> Response {
    let missing = || ApiError::<S>::not_found(format!("no artifact `{name}` in conversation {conversation}"));
    let Ok(id) = conversation.parse::<i64>() else {
        return missing().into_response();
    };
    let client = match frontend.client(principal).await {
        Ok(client) => client,
        Err(e) => {
            return ApiError::<S>::new(StatusCode::SERVICE_UNAVAILABLE, "kernel_unavailable", e.to_string())
                .into_response();
        }
    };
    let read = match client.artifact_read(id, name).await {
        Ok(read) => read,
        Err(e) if e.code().is_some() => return missing().into_response(),
        Err(e) => {
            return ApiError::<S>::new(StatusCode::BAD_GATEWAY, "kernel_error", e.to_string()).into_response();
        }
    };
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(read.data.as_bytes()) else {
        return ApiError::<S>::new(
            StatusCode::BAD_GATEWAY,
            "kernel_error",
            "the kernel sent bytes that are not base64",
        )
        .into_response();
    };
    // The kernel keeps names to `[A-Za-z0-9._-]`, so the header needs no escaping.
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", read.info.name))
        .unwrap_or(HeaderValue::from_static("attachment"));
    let media =
        HeaderValue::from_str(&read.info.media_type).unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let headers = [
        (header::CONTENT_TYPE, media),
        (header::CONTENT_DISPOSITION, disposition),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ];
    (StatusCode::OK, headers, bytes).into_response()
}

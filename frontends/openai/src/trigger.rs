//! `POST /v1/triggers/TOKEN`: a webhook trigger's delivery. Not behind the gateway's token: the
//! trigger's own secret is the proof, sent as `Authorization: Bearer SECRET` or as the
//! HMAC-SHA256 signature of `TIMESTAMP.BODY` (`X-Superpi-Signature-256: sha256=HEX` with
//! `X-Superpi-Timestamp: TIMESTAMP`, within 5 minutes of the kernel's clock); the kernel keeps
//! the secret and checks it (`trigger.fire`), in constant time. A delivery sent again (the same
//! `X-Superpi-Delivery` id within a day, or the same signature) is refused with 401; a burst
//! past a trigger's allowance with 429 and `Retry-After`. The body (UTF-8 text, 32 KiB at most)
//! becomes the run's prompt payload, fenced as data. The answer is `202` once the turn is
//! stored; the sender never waits for the model.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use superpi_client::KernelClient;
use superpi_proto::schedule::{
    DELIVERY_HEADER, IDEMPOTENCY_HEADER, MAX_TRIGGER_BODY, SIGNATURE_HEADER, TIMESTAMP_HEADER, TriggerFireParams,
};

use crate::request;
use crate::wire::ApiError;

/// The kernel's params for a delivery, or the gateway's refusal of it.
pub fn params(token: String, headers: &HeaderMap, body: &[u8]) -> Result<TriggerFireParams, ApiError> {
    if body.len() > MAX_TRIGGER_BODY {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("a trigger's body is at most {MAX_TRIGGER_BODY} bytes"),
        ));
    }
    let body = std::str::from_utf8(body).map_err(|_| ApiError::invalid("a trigger's body is UTF-8 text"))?;
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let bearer = text(header::AUTHORIZATION.as_str()).and_then(|v| {
        let (scheme, secret) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| secret.trim().to_string())
    });
    Ok(TriggerFireParams {
        token,
        body: body.to_string(),
        signature: text(SIGNATURE_HEADER),
        bearer,
        timestamp: text(TIMESTAMP_HEADER),
        delivery: text(DELIVERY_HEADER),
        idempotency_key: text(IDEMPOTENCY_HEADER),
    })
}

/// Delivers to the kernel and answers the sender.
pub async fn deliver(client: &KernelClient, params: TriggerFireParams) -> Response {
    match client.trigger_fire(params).await {
        Ok(fired) => (
            StatusCode::ACCEPTED,
            axum::Json(json!({
                "status": "accepted",
                "schedule_id": fired.schedule_id,
                "run_id": fired.run_id,
                "conversation_id": fired.conversation_id,
                "turn_id": fired.turn_id,
                "repeated": fired.repeated,
            })),
        )
            .into_response(),
        Err(err) => {
            let mut response = request::kernel_error(&err, "").into_response();
            if let Some(secs) = retry_after(&err) {
                response.headers_mut().insert(header::RETRY_AFTER, secs.into());
            }
            response
        }
    }
}

/// The seconds a rate-limited sender should wait, as the kernel said them.
fn retry_after(err: &superpi_client::ClientError) -> Option<u64> {
    let superpi_client::ClientError::Kernel(e) = err else { return None };
    (e.code == superpi_proto::message::codes::RATE_LIMITED)
        .then(|| e.data.as_ref()?.get("retry_after_secs")?.as_u64())
        .flatten()
}

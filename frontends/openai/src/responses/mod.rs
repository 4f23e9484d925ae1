//! `POST /v1/responses`: the OpenAI Responses API in front of the same agent turns as the chat
//! route. The request becomes the chat route's request ([`request`]), the turn is driven as
//! there (`crate::turn`, cancelled when the client leaves), and its chunks are written as
//! Responses events or one `response` object ([`render`]). The token, Origin, CORS and body
//! rules are the gateway's (`server.rs` applies them before this runs).

pub mod render;
pub mod request;

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use superpi_client::KernelClient;
use superpi_proto::message::codes;
use superpi_proto::method::{ConversationInfo, HarnessInfo, OpenParams, WatchParams};
use tokio::sync::{mpsc, oneshot};

use crate::render::RenderOptions;
use crate::request::{self as chat_request, Target};
use crate::turn::{self, Forwarded, Sink};
use crate::wire::ApiError;

use render::{ResponseMeta, ResponsesRenderer, StreamEvent};
pub use request::{ResponsesRequest, parse};

/// Chunk batches buffered per answer before the turn waits for the client.
const FORWARD_BUFFER: usize = 256;

/// An error in the Responses API's shape: `{"error": {"message", "type", "param", "code"}}`, the
/// chat route's shape with `param` naming the request field at fault where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponsesError {
    pub error: ApiError,
    pub param: Option<String>,
}

impl ResponsesError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ResponsesError { error: ApiError::new(status, code, message), param: None }
    }

    /// 400 `invalid_params`.
    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::invalid(message).into()
    }

    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    pub fn body(&self) -> Value {
        let mut body = self.error.body();
        body["error"]["param"] = json!(self.param);
        body
    }
}

impl From<ApiError> for ResponsesError {
    fn from(error: ApiError) -> Self {
        ResponsesError { error, param: None }
    }
}

impl IntoResponse for ResponsesError {
    fn into_response(self) -> Response {
        (self.error.status, axum::Json(self.body())).into_response()
    }
}

/// Opens the request's conversation: the one its `previous_response_id` names (another
/// principal's, or one that is gone, is `previous_response_not_found`), else its session's or a
/// new one. A mode asked for tightens an existing conversation's.
async fn open(
    client: &KernelClient,
    req: &ResponsesRequest,
    target: &Target,
    workspace: Option<String>,
) -> Result<ConversationInfo, ResponsesError> {
    let model = &req.chat.model;
    let mut params = OpenParams { workspace, ..chat_request::open_params(&req.chat, target) };
    if let Some(previous) = &req.previous {
        params.conversation_id = Some(previous.conversation_id);
        params.create = Some(false);
    }
    let info = match client.open(params).await {
        Err(err) if err.code() == Some(codes::NOT_FOUND) && req.previous.is_some() => {
            let id = req.previous.as_ref().map(|p| p.id.as_str()).unwrap_or_default();
            return Err(request::previous_not_found(id));
        }
        other => other.map_err(|e| chat_request::kernel_error(&e, model))?,
    };
    if let Some(mode) = &req.chat.mode
        && !info.created
        && &info.mode != mode
    {
        client.set_mode(info.conversation_id, mode).await.map_err(|e| chat_request::kernel_error(&e, model))?;
    }
    Ok(info)
}

/// Runs the request's turn and answers: SSE events (`stream: true`) or one `response` object.
pub async fn respond(
    client: KernelClient,
    harnesses: &[HarnessInfo],
    workspace: Option<String>,
    req: ResponsesRequest,
) -> Response {
    match respond_inner(client, harnesses, workspace, &req).await {
        Ok(response) => response,
        Err(err) => {
            let e = &err.error;
            tracing::info!(status = %e.status, code = e.code, "response refused: {}", e.message);
            err.into_response()
        }
    }
}

async fn respond_inner(
    client: KernelClient,
    harnesses: &[HarnessInfo],
    workspace: Option<String>,
    req: &ResponsesRequest,
) -> Result<Response, ResponsesError> {
    let model = &req.chat.model;
    let target = chat_request::resolve_model(model, harnesses);
    let info = open(&client, req, &target, workspace).await?;
    let conversation_id = info.conversation_id;
    let sub = client
        .watch(WatchParams::after(conversation_id, info.head_seq))
        .await
        .map_err(|e| chat_request::kernel_error(&e, model))?;
    let submit = chat_request::submission(conversation_id, request::prompt(req, info.created), &req.chat);
    let created_at = superpi_proto::event::now_ms() / 1000;
    let options =
        RenderOptions { id: String::new(), created: created_at, model: model.clone(), include_usage: true, turn_id: 0 };
    // As on the chat route, the submit and the turn run in a task of their own; dropping
    // `forwarded` (this handler, or the stream's writer, gone with its client) cancels the turn.
    let (submitted_tx, submitted_rx) = oneshot::channel();
    let (forward, mut forwarded) = mpsc::channel(FORWARD_BUFFER);
    tokio::spawn(turn::submit_and_drive(
        client,
        sub,
        (submit, info.created),
        options,
        Sink::Forward(forward),
        submitted_tx,
    ));
    let submitted = submitted_rx
        .await
        .map_err(|_| ResponsesError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "the submit was lost"))?
        .map_err(|err| chat_request::kernel_error(&err, model))?;
    tracing::info!(
        conversation_id,
        turn_id = submitted.turn_id,
        created = info.created,
        stream = req.chat.stream,
        "response"
    );

    let meta = ResponseMeta {
        id: request::response_id(conversation_id, submitted.turn_id),
        created_at,
        model: model.clone(),
        instructions: req.instructions.clone(),
        previous_response_id: req.previous.as_ref().map(|p| p.id.clone()),
        metadata: req.metadata.clone(),
        text_format: req.text_format.clone(),
    };
    let mut renderer = ResponsesRenderer::new(meta);
    let mut extra = chat_request::answer_headers(conversation_id, &req.chat.session);

    if req.chat.stream {
        let (tx, rx) = mpsc::channel(FORWARD_BUFFER);
        tokio::spawn(async move {
            let mut events = renderer.start();
            loop {
                for event in events.drain(..) {
                    if tx.send(frame(&event)).await.is_err() {
                        return; // the client left: `forwarded` drops, the turn is cancelled
                    }
                }
                if renderer.ending().is_some() {
                    return;
                }
                events = match forwarded.recv().await {
                    Some(Forwarded::Chunks(chunks)) => renderer.chunks(&chunks),
                    Some(Forwarded::End(failure)) => renderer.end(failure),
                    // The driver always ends with `End`; this is a driver that panicked.
                    None => renderer.end(Some(crate::render::Failure {
                        code: "internal_error",
                        message: "the turn's driver stopped".into(),
                    })),
                };
            }
        });
        let mut headers = superpi_http::sse_headers();
        headers.extend(extra);
        return Ok((StatusCode::OK, headers, superpi_http::sse_body(rx)).into_response());
    }

    loop {
        match forwarded.recv().await {
            Some(Forwarded::Chunks(chunks)) => {
                renderer.chunks(&chunks);
            }
            Some(Forwarded::End(None)) => {
                renderer.end(None);
                break;
            }
            Some(Forwarded::End(Some(failure))) => {
                // As on the chat route: the turn ran (tools too), so a client's automatic retry
                // would run it again; the OpenAI clients read `x-should-retry`.
                extra.insert("x-should-retry", HeaderValue::from_static("false"));
                let err = ResponsesError::from(turn::failure_error(&failure));
                return Ok((extra, err).into_response());
            }
            None => {
                let err = ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    "the turn ended without an answer",
                );
                return Err(err.into());
            }
        }
    }
    Ok((StatusCode::OK, extra, axum::Json(renderer.finished())).into_response())
}

/// One SSE event: `event: TYPE` and its JSON as `data:`.
fn frame(event: &StreamEvent) -> Bytes {
    let data = superpi_http::sse_data(&event.data.to_string());
    let mut out = Vec::with_capacity(data.len() + event.kind.len() + 8);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(event.kind.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(&data);
    Bytes::from(out)
}

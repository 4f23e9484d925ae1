//! The HTTP surface: routes, authentication, one kernel connection per principal.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::json;
use superpi_client::sync::lock;
use superpi_client::{ClientError, KernelClient};
use superpi_http::{Common, Frontend, ORIGINS_VAR};
use superpi_proto::method::{ConversationInfo, HarnessInfo, WatchParams};
use tokio::sync::{mpsc, oneshot};

use crate::mcp::McpHttp;
use crate::render::RenderOptions;
use crate::request::{self, ChatRequest, Target};
use crate::turn::{self, Sink};
use crate::wire::{ApiError, Completion, ModelEntry, ModelList, OpenAiShape};

/// Largest request body accepted: half the kernel's frame limit, so the prompt made from it
/// (JSON text is not longer once decoded and encoded again) always fits one kernel frame.
const BODY_LIMIT: usize = superpi_proto::frame::DEFAULT_MAX_FRAME / 2;

/// Chunks buffered per streamed answer before the turn waits for the client.
const STREAM_BUFFER: usize = 512;

/// The gateway: its configuration and its kernel connections.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    /// Tokens, origins, the workspace and the kernel connections per principal.
    frontend: Arc<Frontend>,
    mcp: McpHttp,
    /// `harness.list`, kept briefly: every request needs it to read `model`.
    harnesses: std::sync::Mutex<Option<(std::time::Instant, Vec<HarnessInfo>)>>,
}

/// How long a harness list is reused.
const HARNESS_TTL: std::time::Duration = std::time::Duration::from_secs(5);

impl Gateway {
    pub fn new(frontend: Arc<Frontend>) -> Self {
        let mcp_workspace = frontend.workspace().unwrap_or(".").to_string();
        let mcp = McpHttp::new(frontend.connect_options().clone(), mcp_workspace, frontend.tokens_enabled());
        Gateway { inner: Arc::new(Inner { frontend, mcp, harnesses: std::sync::Mutex::new(None) }) }
    }

    /// The routes.
    pub fn router(&self) -> Router {
        let routes = Router::new()
            .route("/v1/models", get(models))
            .route("/v1/chat/completions", post(chat))
            .route("/v1/responses", post(responses))
            .route("/v1/messages", post(crate::messages::messages::<Gateway>))
            .route("/v1/messages/count_tokens", post(crate::messages::count_tokens::<Gateway>))
            .route("/metrics", get(metrics))
            .route("/ready", get(ready))
            .route("/v1/triggers/{token}", post(trigger))
            .route("/mcp", any(mcp))
            .route(superpi_http::ARTIFACT_ROUTE, get(artifact));
        let common = Common {
            service: "superpi gateway",
            not_found: "no such endpoint: the gateway serves /v1/models, /v1/chat/completions, /v1/responses, /v1/messages, \
                        /v1/triggers/TOKEN, /v1/artifacts/ID/NAME, /metrics and /mcp",
            body_limit: BODY_LIMIT,
        };
        superpi_http::with_common::<OpenAiShape, _>(routes, common)
            .layer(axum::middleware::from_fn_with_state(self.inner.frontend.clone(), crate::cors::layer))
            .with_state(self.clone())
    }

    /// The principal of a request, or 401 (no valid token) or 403 (a foreign browser origin
    /// while no token is configured). The token is `Authorization: Bearer`'s or, as Anthropic
    /// clients send it, `x-api-key`'s.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Result<String, ApiError> {
        if !self.inner.frontend.request_origin_allowed(headers) {
            return Err(ApiError::forbidden_origin(format!(
                "requests from this Origin are refused without a token (see {ORIGINS_VAR})"
            )));
        }
        let frontend = &self.inner.frontend;
        frontend
            .principal(headers)
            .or_else(|err| crate::messages::api_key_as_bearer(headers).map_or(Err(err), |h| frontend.principal(&h)))
            .map_err(|err| ApiError::unauthorized(format!("Incorrect API key provided: {err}")))
    }

    pub(crate) async fn client(&self, principal: &str) -> Result<KernelClient, ClientError> {
        self.inner.frontend.client(principal).await
    }

    /// The workspace of the conversations the gateway opens.
    pub(crate) fn workspace(&self) -> Option<String> {
        self.inner.frontend.workspace().map(String::from)
    }
}

/// What the Messages route needs of the gateway.
impl crate::messages::Door for Gateway {
    fn authenticate(&self, headers: &HeaderMap) -> Result<String, ApiError> {
        Gateway::authenticate(self, headers)
    }

    async fn client(&self, principal: &str) -> Result<KernelClient, ClientError> {
        Gateway::client(self, principal).await
    }

    async fn harnesses(&self, client: &KernelClient) -> Result<Vec<HarnessInfo>, ClientError> {
        Gateway::harnesses(self, client).await
    }

    fn workspace(&self) -> Option<String> {
        Gateway::workspace(self)
    }
}

impl Gateway {
    /// The harnesses, from a recent `harness.list` or a new one.
    pub(crate) async fn harnesses(&self, client: &KernelClient) -> Result<Vec<HarnessInfo>, ClientError> {
        if let Some((at, list)) = lock(&self.inner.harnesses).as_ref()
            && at.elapsed() < HARNESS_TTL
        {
            return Ok(list.clone());
        }
        let list = client.harnesses().await?;
        *lock(&self.inner.harnesses) = Some((std::time::Instant::now(), list.clone()));
        Ok(list)
    }
}

/// `GET /v1/artifacts/{conversation}/{name}`: a file a turn wrote for the person, to the
/// conversation's principal only.
async fn artifact(
    State(gw): State<Gateway>,
    headers: HeaderMap,
    Path((conversation, name)): Path<(String, String)>,
) -> Response {
    match gw.authenticate(&headers) {
        Ok(principal) => {
            superpi_http::artifact_download::<OpenAiShape>(&gw.inner.frontend, &principal, &conversation, &name).await
        }
        Err(e) => e.into_response(),
    }
}

async fn mcp(
    State(gw): State<Gateway>,
    Query(query): Query<HashMap<String, String>>,
    request: axum::extract::Request,
) -> Response {
    match gw.authenticate(request.headers()) {
        Ok(principal) => gw.inner.mcp.handle(principal, query.get("harness").cloned(), request).await,
        Err(err) => err.into_response(),
    }
}

/// The kernel's counters as Prometheus text, behind the same token and Origin rules as the API.
async fn metrics(State(gw): State<Gateway>, headers: HeaderMap) -> Response {
    let principal = match gw.authenticate(&headers) {
        Ok(principal) => principal,
        Err(err) => return err.into_response(),
    };
    let metrics = match gw.client(&principal).await {
        Ok(client) => client.metrics().await,
        Err(err) => Err(err),
    };
    match metrics {
        Ok(metrics) => {
            let content_type = [(axum::http::header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)];
            (content_type, crate::metrics::render(&metrics)).into_response()
        }
        Err(err) => request::kernel_error(&err, "").into_response(),
    }
}

/// How long `/ready` waits for the kernel's answer before saying it is not ready.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// `GET /ready`, for a load balancer: 200 when the kernel is reachable (started if none runs,
/// as for any request) and its store answers (a one-row `session.list` of the gateway's own
/// principal, which reads the store: SQLite or PostgreSQL), else 503 with the reason. Like
/// `/health` it needs no token and says nothing of any conversation.
async fn ready(State(gw): State<Gateway>) -> Response {
    use superpi_proto::method::{ListParams, ListResult, Method};
    let principal = gw.inner.frontend.connect_options().principal.clone();
    let check = async {
        let client = gw.client(&principal).await.map_err(|err| ("the kernel is not reachable", err))?;
        let list = Method::SessionList(ListParams { limit: Some(1), ..Default::default() });
        client.request::<ListResult>(list).await.map_err(|err| ("the kernel's store did not answer", err))
    };
    // The reason said is one of three fixed sentences: the error itself (which may name a
    // database host) goes to the log, not to whoever asks without a token.
    let reason = match tokio::time::timeout(READY_WAIT, check).await {
        Ok(Ok(_)) => return axum::Json(json!({"status": "ready"})).into_response(),
        Ok(Err((reason, err))) => {
            tracing::warn!("/ready: {reason}: {err}");
            reason
        }
        Err(_) => "the kernel did not answer in time",
    };
    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(json!({"status": "unavailable", "reason": reason}))).into_response()
}

/// A webhook trigger's delivery: its own secret is the proof, not the gateway's token
/// (`trigger.rs`); the kernel checks it, whichever principal this connection is.
async fn trigger(State(gw): State<Gateway>, Path(token): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    let params = match crate::trigger::params(token, &headers, &body) {
        Ok(params) => params,
        Err(err) => return err.into_response(),
    };
    let principal = gw.inner.frontend.connect_options().principal.clone();
    match gw.client(&principal).await {
        Ok(client) => crate::trigger::deliver(&client, params).await,
        Err(err) => request::kernel_error(&err, "").into_response(),
    }
}

async fn models(State(gw): State<Gateway>, headers: HeaderMap) -> Response {
    // An Anthropic client (it sends `anthropic-version`) reads the list in its own shape.
    let anthropic = headers.contains_key(crate::messages::VERSION_HEADER);
    match list_models(&gw, &headers).await {
        Ok(list) if anthropic => axum::Json(crate::messages::model_list(list)).into_response(),
        Ok(list) => axum::Json(list).into_response(),
        Err(err) if anthropic => crate::messages::from_openai(err).into_response(),
        Err(err) => err.into_response(),
    }
}

async fn list_models(gw: &Gateway, headers: &HeaderMap) -> Result<ModelList, ApiError> {
    let principal = gw.authenticate(headers)?;
    let client = gw.client(&principal).await.map_err(|e| request::kernel_error(&e, ""))?;
    let harnesses = client.harnesses().await.map_err(|e| request::kernel_error(&e, ""))?;
    let mut data: Vec<ModelEntry> = harnesses
        .into_iter()
        .map(|h| ModelEntry {
            capabilities: Some(json!({
                "harness": true,
                "tools": h.tools,
                "default_mode": h.default_mode,
                "max_mode": h.max_mode,
                "workspace": h.workspace,
                "streaming": true,
                "reasoning": true,
                "client_tools": false,
            })),
            id: h.id,
            object: "model",
            created: 0,
            owned_by: "superpi".into(),
            name: Some(h.name),
            description: Some(h.description),
        })
        .collect();
    // The configured providers' models, as the kernel knows them (not this process's
    // environment).
    let models = client.models().await.map_err(|e| request::kernel_error(&e, ""))?;
    for m in models {
        if !data.iter().any(|d| d.id == m.id) {
            data.push(ModelEntry {
                id: m.id,
                object: "model",
                created: 0,
                owned_by: m.provider,
                name: None,
                description: None,
                capabilities: None,
            });
        }
    }
    Ok(ModelList { object: "list", data })
}

async fn chat(
    State(gw): State<Gateway>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_error(&rejection).into_response(),
    };
    match chat_inner(&gw, &headers, &body).await {
        Ok(response) => response,
        Err(err) => {
            tracing::info!(status = %err.status, code = err.code, "chat completion refused: {}", err.message);
            err.into_response()
        }
    }
}

/// A body the request's route could not read: over the limit (413) or not read whole (400).
fn body_error(rejection: &axum::extract::rejection::BytesRejection) -> ApiError {
    let code = if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE { "request_too_large" } else { "invalid_params" };
    ApiError::new(rejection.status(), code, format!("unreadable body: {rejection}"))
}

/// `POST /v1/responses` (`responses/`), behind the chat route's token, Origin and body rules: the
/// principal's kernel connection and the harnesses, then the Responses API's own work.
async fn responses(
    State(gw): State<Gateway>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_error(&rejection).into_response(),
    };
    let principal = match gw.authenticate(&headers) {
        Ok(principal) => principal,
        Err(err) => return err.into_response(),
    };
    let req = match crate::responses::parse(&body, &headers) {
        Ok(req) => req,
        Err(err) => return err.into_response(),
    };
    let kernel = async {
        let client = gw.client(&principal).await?;
        let harnesses = gw.harnesses(&client).await?;
        Ok::<_, ClientError>((client, harnesses))
    };
    match kernel.await {
        Ok((client, harnesses)) => {
            let workspace = gw.inner.frontend.workspace().map(String::from);
            crate::responses::respond(client, &harnesses, workspace, req).await
        }
        Err(err) => request::kernel_error(&err, &req.chat.model).into_response(),
    }
}

/// Where a completion's answer arrives: SSE frames, or the whole answer when the turn ends.
enum Answer {
    Stream(mpsc::Receiver<Bytes>),
    Whole(oneshot::Receiver<Result<Vec<crate::wire::Chunk>, ApiError>>),
}

/// Opens (or finds) the request's conversation.
async fn open(
    client: &KernelClient,
    req: &ChatRequest,
    target: &Target,
    workspace: Option<String>,
) -> Result<ConversationInfo, ApiError> {
    request::open_with(
        client,
        req,
        superpi_proto::method::OpenParams { workspace, ..request::open_params(req, target) },
    )
    .await
}

async fn chat_inner(gw: &Gateway, headers: &HeaderMap, body: &[u8]) -> Result<Response, ApiError> {
    let began = std::time::Instant::now();
    let principal = gw.authenticate(headers)?;
    let req = request::parse_chat(body, headers)?;
    let client = gw.client(&principal).await.map_err(|e| request::kernel_error(&e, &req.model))?;
    let harnesses = gw.harnesses(&client).await.map_err(|e| request::kernel_error(&e, &req.model))?;
    let target = request::resolve_model(&req.model, &harnesses);
    let t_harnesses = began.elapsed();
    let info = open(&client, &req, &target, gw.inner.frontend.workspace().map(String::from)).await?;
    let t_open = began.elapsed();
    let conversation_id = info.conversation_id;
    let sub = client
        .watch(WatchParams::after(conversation_id, info.head_seq))
        .await
        .map_err(|e| request::kernel_error(&e, &req.model))?;
    let t_watch = began.elapsed();
    let submit = request::submission(conversation_id, request::prompt(&req, info.created), &req);
    let options = RenderOptions {
        id: String::new(),
        created: superpi_proto::event::now_ms() / 1000,
        model: req.model.clone(),
        include_usage: req.include_usage || !req.stream,
        turn_id: 0,
    };
    // The submit and the turn run in a task of their own (see `turn::submit_and_drive`); the
    // answer comes through `body`, and dropping this handler (a client that left) closes it.
    let (submitted_tx, submitted_rx) = oneshot::channel();
    let (sink, body) = if req.stream {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        (Sink::Stream(tx), Answer::Stream(rx))
    } else {
        let (tx, rx) = oneshot::channel();
        (Sink::Collect { chunks: Vec::new(), done: Some(tx) }, Answer::Whole(rx))
    };
    tokio::spawn(turn::submit_and_drive(client, sub, (submit, info.created), options, sink, submitted_tx));
    let submitted = submitted_rx
        .await
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "the submit was lost"))?
        .map_err(|err| request::kernel_error(&err, &req.model))?;
    tracing::info!(
        principal,
        conversation_id,
        turn_id = submitted.turn_id,
        created = info.created,
        stream = req.stream,
        harnesses_us = t_harnesses.as_micros() as u64,
        open_us = t_open.as_micros() as u64,
        watch_us = t_watch.as_micros() as u64,
        submit_us = began.elapsed().as_micros() as u64,
        "chat completion"
    );
    let mut extra = request::answer_headers(conversation_id, &req.session);

    let rx = match body {
        Answer::Stream(rx) => {
            let mut headers = superpi_http::sse_headers();
            headers.extend(extra);
            return Ok((StatusCode::OK, headers, superpi_http::sse_body(rx)).into_response());
        }
        Answer::Whole(rx) => rx,
    };
    let answer = rx.await.map_err(|_| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "the turn ended without an answer")
    })?;
    let chunks = match answer {
        Ok(chunks) => chunks,
        Err(err) => {
            // The turn ran (and may have run tools): a client's automatic retry would run it
            // again, so the OpenAI clients are told not to (they read `x-should-retry`).
            extra.insert("x-should-retry", HeaderValue::from_static("false"));
            return Ok((extra, err).into_response());
        }
    };
    let completion = Completion::from_chunks(&chunks)
        .ok_or_else(|| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "empty answer"))?;
    Ok((StatusCode::OK, extra, axum::Json(completion)).into_response())
}

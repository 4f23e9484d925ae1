//! The HTTP surface: routes, authentication, one kernel connection per principal.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use superpi_client::{ClientError, KernelClient};
use superpi_http::{Common, Frontend};
use superpi_proto::ContentBlock;
use superpi_proto::message::codes;
use superpi_proto::method::{ClientTool, ConversationInfo, OpenParams, SubmitParams, WatchParams};

use crate::origin;
use crate::pending::ClientCalls;
use crate::render::{RenderOptions, Renderer};
use crate::request::{self, AguiShape, ApiError, RunPlan};
use crate::stream::{self, Owner, Reply, Start};
use crate::wire::InputRequest;

const BODY_LIMIT: usize = 8 << 20;

/// The AG-UI server: cheap to clone, shared by every request.
#[derive(Clone)]
pub struct Agui {
    frontend: Arc<Frontend>,
    calls: ClientCalls,
}

impl Agui {
    pub fn new(frontend: Arc<Frontend>) -> Self {
        Agui { frontend, calls: ClientCalls::default() }
    }

    pub fn router(&self) -> Router {
        let routes = Router::new()
            .route("/agui/v1/run", post(run))
            .route("/agui/v1/capabilities", get(capabilities))
            .route("/agui/v1/sessions/{id}/events", get(events))
            .route("/agui/v1/sessions/{id}/input", post(input))
            .route(superpi_http::ARTIFACT_ROUTE, get(artifact));
        let common = Common { service: "superpi-agui", not_found: "no such route", body_limit: BODY_LIMIT };
        superpi_http::with_common::<AguiShape, _>(routes, common)
            .layer(axum::middleware::from_fn_with_state(self.frontend.clone(), origin::guard))
            .with_state(self.clone())
    }

    /// The principal of a request, or 401.
    fn authenticate(&self, headers: &HeaderMap) -> Result<String, ApiError> {
        self.frontend.principal(headers).map_err(|err| ApiError::unauthorized(err.to_string()))
    }

    /// The kernel connection of a principal, made on first use and again after a loss.
    async fn client(&self, principal: &str) -> Result<KernelClient, ApiError> {
        self.frontend.client(principal).await.map_err(|e| request::kernel_error(&e))
    }

    /// The conversation of a thread that has had a run, or 404. A lookup only: asking about
    /// an unknown thread creates nothing.
    async fn existing(&self, client: &KernelClient, thread: &str) -> Result<ConversationInfo, ApiError> {
        let lookup = OpenParams { external_id: Some(thread.to_string()), create: Some(false), ..Default::default() };
        match client.open(lookup).await {
            Ok(info) => Ok(info),
            Err(ClientError::Kernel(e)) if e.code == codes::NOT_FOUND => {
                Err(ApiError::not_found(format!("no conversation for thread `{thread}`")))
            }
            Err(e) => Err(request::kernel_error(&e)),
        }
    }
}

/// `GET /v1/artifacts/{conversation}/{name}`: a file a turn wrote for the person (the link
/// of the `superpi.artifact` custom event).
async fn artifact(
    State(agui): State<Agui>,
    headers: HeaderMap,
    Path((conversation, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let principal = agui.authenticate(&headers)?;
    Ok(superpi_http::artifact_download::<AguiShape>(&agui.frontend, &principal, &conversation, &name).await)
}

/// `POST /agui/v1/run`: a `RunAgentInput` in, the run's AG-UI events out.
async fn run(State(agui): State<Agui>, headers: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    let principal = agui.authenticate(&headers)?;
    let plan = request::run_plan(&body)?;
    let client = agui.client(&principal).await?;
    if !plan.resume.is_empty() || !plan.tool_results.is_empty() {
        return continue_run(&agui, principal, client, plan).await;
    }
    let kernel_err = |e: ClientError| request::kernel_error(&e);
    let mut info = client
        .open(OpenParams {
            external_id: Some(plan.thread_id.clone()),
            harness: plan.harness.clone(),
            mode: plan.mode.clone(),
            workspace: agui.frontend.workspace().map(String::from),
            ..Default::default()
        })
        .await
        .map_err(kernel_err)?;
    if let Some(mode) = &plan.mode
        && !info.created
        && request::tightens(mode, &info.mode)
    {
        client.set_mode(info.conversation_id, mode).await.map_err(kernel_err)?;
        info.mode = mode.clone();
    }
    let conversation_id = info.conversation_id;
    let subscription = client.watch(WatchParams::live(conversation_id).interactive(true)).await.map_err(kernel_err)?;
    let prompt = plan.prompt_for(info.created);
    let mut content: Vec<ContentBlock> = Vec::with_capacity(1 + plan.images.len());
    if !prompt.trim().is_empty() {
        content.push(ContentBlock::text(prompt));
    }
    content.extend(plan.images.iter().cloned());
    // A run started while the thread's turn runs steers that turn (and follows it to its end).
    let client_tools = plan.client_tools.iter().map(client_tool).collect();
    let params = SubmitParams { conversation_id, content, steer: true, client_tools, ..Default::default() };
    let renderer = Renderer::new(&plan.thread_id, &info, run_options(&plan));
    let owner = Owner { calls: agui.calls.clone(), principal };
    let start = Start::Submit(params);
    let (body, submitted) =
        stream::spawn_run(client, subscription, renderer, (agui.frontend.stopping(), owner), plan.run_id, start);
    let lost = || ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "the submit was lost");
    let submitted = submitted.await.map_err(|_| lost())?.map_err(kernel_err)?;
    let (turn_id, steered) = (submitted.turn_id, submitted.steered);
    tracing::info!(thread = %plan.thread_id, conversation_id, turn_id, steered, "run");
    Ok((superpi_http::sse_headers(), body).into_response())
}

/// How a run's stream renders: interrupts for a client of AG-UI 1.0; client tools end it.
fn run_options(plan: &RunPlan) -> RenderOptions {
    RenderOptions { interrupts: plan.interrupts, client_tools: true, ..Default::default() }
}

/// A client's tool as the kernel offers it (an object schema when it gave none).
fn client_tool(tool: &crate::wire::ClientTool) -> ClientTool {
    let schema = tool.parameters.clone().filter(serde_json::Value::is_object);
    ClientTool {
        name: tool.name.clone(),
        description: tool.description.clone(),
        input_schema: schema.unwrap_or_else(|| json!({"type": "object", "properties": {}})),
    }
}

/// A run that answers the last run's interrupts or brings its client tools' results: the
/// answers go to the kernel, and the run follows the waiting turn from its question on.
async fn continue_run(
    agui: &Agui,
    principal: String,
    client: KernelClient,
    plan: RunPlan,
) -> Result<Response, ApiError> {
    let info = agui.existing(&client, &plan.thread_id).await?;
    let mut replies = Vec::new();
    let mut from: Option<(i64, u64)> = None;
    let mut at = |turn_id: i64, seq: u64| {
        from = Some(from.map_or((turn_id, seq), |(t, s)| (t, s.min(seq))));
    };
    for answer in &plan.resume {
        at(answer.turn_id, answer.seq);
        let (request_id, option_id) = (answer.request_id.clone(), answer.option_id.clone());
        match answer.question.clone() {
            Some(outcome) => replies.push(Reply::Ui { request_id, outcome }),
            None => replies.push(Reply::Permission { request_id, option_id }),
        }
    }
    for result in &plan.tool_results {
        // Results of calls answered before (the client sends its whole history) wait no more.
        let Some(waiting) = agui.calls.take(&principal, &result.tool_call_id) else { continue };
        at(waiting.turn_id, waiting.seq);
        let outcome = json!({"content": result.content, "is_error": result.is_error});
        replies.push(Reply::Ui { request_id: waiting.request_id, outcome });
    }
    let Some((turn_id, seq)) = from else {
        return Err(ApiError::not_found(
            "no call of a client tool waits for these results (answered, timed out, or the server restarted)",
        ));
    };
    let conversation_id = info.conversation_id;
    let watch = WatchParams::after(conversation_id, seq).interactive(true);
    let subscription = client.watch(watch).await.map_err(|e| request::kernel_error(&e))?;
    let mut renderer = Renderer::new(&plan.thread_id, &info, run_options(&plan));
    renderer.continue_turn(turn_id, seq);
    let owner = Owner { calls: agui.calls.clone(), principal };
    let start = Start::Continue { turn_id, replies };
    let (body, _) =
        stream::spawn_run(client, subscription, renderer, (agui.frontend.stopping(), owner), plan.run_id, start);
    tracing::info!(thread = %plan.thread_id, conversation_id, turn_id, "run continues");
    Ok((superpi_http::sse_headers(), body).into_response())
}

/// `GET /agui/v1/capabilities`: what `getCapabilities` answers (AG-UI's `AgentCapabilities`).
async fn capabilities(State(agui): State<Agui>, headers: HeaderMap) -> Result<Response, ApiError> {
    agui.authenticate(&headers)?;
    Ok(axum::Json(crate::wire::capabilities()).into_response())
}

/// A text prompt for `session.submit`.
fn submit(conversation_id: i64, prompt: String, steer: bool) -> SubmitParams {
    SubmitParams { conversation_id, prompt: Some(prompt), steer, ..Default::default() }
}

/// `GET /agui/v1/sessions/{thread}/events`: snapshots, then every later run live.
async fn events(
    State(agui): State<Agui>,
    Path(thread): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let principal = agui.authenticate(&headers)?;
    let client = agui.client(&principal).await?;
    let info = agui.existing(&client, &thread).await?;
    let kernel_err = |e: ClientError| request::kernel_error(&e);
    // The first page now (the conversation as it stands); the rest as the snapshot is written.
    let pages = client.history_pages(info.conversation_id).await.map_err(kernel_err)?;
    let head = pages.end_seq();
    let subscription =
        client.watch(WatchParams::after(info.conversation_id, head).interactive(true)).await.map_err(kernel_err)?;
    let renderer =
        Renderer::new(&thread, pages.conversation(), RenderOptions { echo_user: true, ..Default::default() });
    let run_id = format!("attach-{}-{head}", info.conversation_id);
    let body = stream::spawn_attach(client, subscription, renderer, agui.frontend.stopping(), &run_id, pages);
    Ok((superpi_http::sse_headers(), body).into_response())
}

/// `POST /agui/v1/sessions/{thread}/input`: prompt, permission, answer or cancel.
async fn input(
    State(agui): State<Agui>,
    Path(thread): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let principal = agui.authenticate(&headers)?;
    let input = request::input_request(&body)?;
    let client = agui.client(&principal).await?;
    let kernel_err = |e: ClientError| request::kernel_error(&e);
    match input {
        InputRequest::Prompt { prompt, steer } => {
            let info = agui.existing(&client, &thread).await?;
            let submitted = client.submit(submit(info.conversation_id, prompt, steer)).await.map_err(kernel_err)?;
            let body = json!({
                "conversationId": info.conversation_id,
                "turnId": submitted.turn_id,
                "queued": submitted.queued,
                "steered": submitted.steered,
            });
            Ok((StatusCode::ACCEPTED, axum::Json(body)).into_response())
        }
        InputRequest::Permission { request_id, option_id: answer } | InputRequest::Answer { request_id, answer } => {
            let result = client.respond_permission(&request_id, &answer).await.map_err(kernel_err)?;
            let accepted = result.get("accepted").and_then(serde_json::Value::as_bool).unwrap_or(false);
            Ok(axum::Json(json!({"requestId": request_id, "accepted": accepted})).into_response())
        }
        InputRequest::Cancel {} => {
            let info = agui.existing(&client, &thread).await?;
            let result = client.cancel(info.conversation_id).await.map_err(kernel_err)?;
            // False when no turn was running.
            let cancelled = result.get("cancelled").and_then(serde_json::Value::as_bool).unwrap_or(false);
            Ok(axum::Json(json!({"conversationId": info.conversation_id, "cancelled": cancelled})).into_response())
        }
    }
}

//! `POST /v1/messages` (Anthropic Messages) and `POST /v1/messages/count_tokens`: Claude Code
//! and the Anthropic SDKs, pointed at the gateway with `ANTHROPIC_BASE_URL`, get the superpi
//! agent as their model.
//!
//! A Messages request is read as the Chat Completions request it amounts to ([`read`]) and goes
//! through the same request map ([`crate::request`]): the model (a harness id; any other name,
//! as Claude Code's `claude-...` ids, is the default harness with its default model), sessions
//! (`x-session-id`, `x-conversation-id`, and Claude Code's `x-claude-code-session-id`), a new
//! conversation seeded with the earlier messages, modes and images. Its turn runs as a chat
//! completion's does ([`crate::turn`]) and [`crate::messages_render`] writes the chunks as
//! Messages events or one message. Refusals are in Anthropic's error shape ([`AnthropicShape`]).
//! Tokens (also in `x-api-key`), the Origin rule, CORS, the bind rule and the body limit are
//! the gateway's own.
//!
//! Over 500 lines: reading a Messages request (content, tool and system blocks, the session
//! key, the checks Anthropic makes) is most of it, the route the rest; split them when it grows.

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use superpi_client::{ClientError, KernelClient};
use superpi_http::ErrorShape;
use superpi_proto::method::{HarnessInfo, WatchParams};
use tokio::sync::{mpsc, oneshot};

use crate::messages_render::{Encoder, StreamEvent, message_of};
use crate::render::{Failure, RenderOptions};
use crate::request::{self, ChatRequest, Target};
use crate::turn::{self, Frames, Sink};
use crate::wire::{self, Chunk};

/// The header every Anthropic client sends; `GET /v1/models` answers it in Anthropic's shape.
pub const VERSION_HEADER: &str = "anthropic-version";

/// Claude Code's session id, one per Claude Code session (kept by `--continue` and `--resume`).
const CLAUDE_CODE_SESSION: &str = "x-claude-code-session-id";

/// The role a `system` turn among the messages gets in the request map: context in a seeded
/// transcript, but not the system prompt, which keys a session (Claude Code sends such turns,
/// and their place and shape change from one request to the next).
pub const SYSTEM_TURN: &str = "system-note";

/// Events buffered per streamed answer before the turn waits for the client.
const STREAM_BUFFER: usize = 512;

/// Anthropic's error body: `{"type": "error", "error": {"type", "message"}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnthropicShape;

impl ErrorShape for AnthropicShape {
    const INVALID: &'static str = "invalid_request_error";
    const UNAUTHORIZED: &'static str = "authentication_error";

    fn body(error: &Error) -> Value {
        json!({"type": "error", "error": {"type": error_type(error.status), "message": error.message}})
    }
}

/// A refusal in Anthropic's shape.
pub type Error = superpi_http::ApiError<AnthropicShape>;

/// Anthropic's error `type` of a status.
pub fn error_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        s if s < 500 => "invalid_request_error",
        _ => "api_error",
    }
}

/// An error of the shared request map (OpenAI-shaped) in Anthropic's shape: same status, same
/// message.
pub fn from_openai(err: wire::ApiError) -> Error {
    Error::new(err.status, err.code, err.message)
}

/// The headers with `x-api-key`'s token as `Authorization: Bearer` (Anthropic clients send
/// their key there; the SDKs send `Authorization` only when given an auth token). `None`
/// without a usable `x-api-key`.
pub fn api_key_as_bearer(headers: &HeaderMap) -> Option<HeaderMap> {
    let key = headers.get("x-api-key")?.to_str().ok()?.trim();
    if key.is_empty() {
        return None;
    }
    let mut headers = headers.clone();
    headers.insert(AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {key}")).ok()?);
    Some(headers)
}

/// The gateway's list of models in the shape of Anthropic's `GET /v1/models` (`type`,
/// `display_name`, `created_at`, and the page's `has_more`, `first_id`, `last_id`), keeping the
/// OpenAI fields beside them.
pub fn model_list(list: wire::ModelList) -> Value {
    let data: Vec<Value> = list
        .data
        .into_iter()
        .map(|m| {
            let display_name = m.name.clone().unwrap_or_else(|| m.id.clone());
            let mut entry = serde_json::to_value(&m).unwrap_or_default();
            if let Value::Object(entry) = &mut entry {
                entry.insert("type".into(), json!("model"));
                entry.insert("display_name".into(), json!(display_name));
                entry.insert("created_at".into(), json!("1970-01-01T00:00:00Z"));
            }
            entry
        })
        .collect();
    let id = |entry: Option<&Value>| entry.and_then(|e| e.get("id")).cloned().unwrap_or(Value::Null);
    json!({"data": data, "has_more": false, "first_id": id(data.first()), "last_id": id(data.last())})
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid(message)
}

/// A Messages request, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// The Chat Completions request body it amounts to, for [`request::parse_chat`].
    pub chat: Value,
    /// Thinking asked for, with its text (`thinking.type` `enabled` or `adaptive`, `display`
    /// not `omitted`): the reasoning channel is sent as `thinking` blocks.
    pub thinking: bool,
    /// For `count_tokens`: the estimated tokens of the client's `tools`.
    pub tool_tokens: u64,
}

/// Reads a `POST /v1/messages` body (`count_tokens`: a `/v1/messages/count_tokens` body, which
/// has no `max_tokens`). Checks what the gateway reads as the API does (`model`, `max_tokens`,
/// `messages`, `system`, `stream`, `thinking`, `metadata.user_id`, `output_config.format`) and
/// ignores the rest (`tools`, `tool_choice`, sampling, `stop_sequences`, betas' other fields).
/// Content blocks become text: `tool_use` and `tool_result` blocks (the client never runs a tool here, but a history
/// may hold some from another model) as bracketed lines, a text `document` as its text;
/// `thinking` blocks and other kinds are dropped. Images are base64 sources; a URL or a file
/// source is refused.
pub fn read(body: &[u8], headers: &HeaderMap, count_tokens: bool) -> Result<Read, Error> {
    let body: Value =
        serde_json::from_slice(body).map_err(|err| invalid(format!("the request body is not valid JSON: {err}")))?;
    let Value::Object(body) = body else {
        return Err(invalid("the request body must be a JSON object"));
    };
    let model = match body.get("model") {
        None => return Err(invalid("model: Field required")),
        Some(Value::String(m)) if !m.trim().is_empty() => m.trim().to_string(),
        Some(Value::String(_)) => return Err(invalid("model: String should have at least 1 character")),
        Some(_) => return Err(invalid("model: Input should be a valid string")),
    };
    if !count_tokens {
        max_tokens(body.get("max_tokens"))?;
    }
    let stream = match body.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("stream: Input should be a valid boolean")),
    };
    let thinking = match body.get("thinking") {
        None | Some(Value::Null) => false,
        Some(Value::Object(t)) => {
            matches!(t.get("type").and_then(Value::as_str), Some("enabled" | "adaptive"))
                && t.get("display").and_then(Value::as_str) != Some("omitted")
        }
        Some(_) => return Err(invalid("thinking: Input should be a valid dictionary")),
    };
    match body.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            if m.get("user_id").is_some_and(|u| !u.is_string() && !u.is_null()) {
                return Err(invalid("metadata.user_id: Input should be a valid string"));
            }
        }
        Some(_) => return Err(invalid("metadata: Input should be a valid dictionary")),
    }

    let mut messages = Vec::new();
    if let Some(system) = system_text(body.get("system").unwrap_or(&Value::Null))? {
        messages.push(json!({"role": "system", "content": system}));
    }
    let raw = match body.get("messages") {
        None => return Err(invalid("messages: Field required")),
        Some(Value::Array(raw)) => raw,
        Some(_) => return Err(invalid("messages: Input should be a valid list")),
    };
    if raw.is_empty() {
        return Err(invalid("messages: at least one message is required"));
    }
    for (i, m) in raw.iter().enumerate() {
        let at = format!("messages.{i}");
        let role = match m.get("role").and_then(Value::as_str) {
            Some("user") => "user",
            Some("assistant") => "assistant",
            Some("system") => SYSTEM_TURN,
            _ => return Err(invalid(format!("{at}.role: Input should be 'user' or 'assistant'"))),
        };
        let content = m.get("content").ok_or_else(|| invalid(format!("{at}.content: Field required")))?;
        messages.push(json!({"role": role, "content": parts(content, &format!("{at}.content"))?}));
    }

    let mut chat = Map::new();
    chat.insert("model".into(), json!(model));
    chat.insert("stream".into(), json!(stream));
    chat.insert("messages".into(), Value::Array(messages));
    // superpi's own fields, as the Chat Completions endpoint takes them.
    for field in ["session_id", "execution_mode"] {
        if let Some(value) = body.get(field) {
            chat.insert(field.into(), value.clone());
        }
    }
    // Claude Code names its session in a header: the session id, unless the request names one.
    if !chat.contains_key("session_id")
        && let Some(id) = headers.get(CLAUDE_CODE_SESSION).and_then(|v| v.to_str().ok()).map(str::trim)
        && !id.is_empty()
    {
        chat.insert("session_id".into(), json!(id));
    }
    if let Some(schema) = output_schema(&body)? {
        let format = json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema}});
        chat.insert("response_format".into(), format);
    }
    let tool_tokens = if count_tokens { tools_tokens(body.get("tools")) } else { 0 };
    Ok(Read { chat: Value::Object(chat), thinking, tool_tokens })
}

/// Structured output: `output_config.format` (or the older top-level `output_format`) of type
/// `json_schema` is the turn's output schema, which the kernel checks every answer against.
fn output_schema(body: &Map<String, Value>) -> Result<Option<Value>, Error> {
    let (format, at) = match (body.get("output_config"), body.get("output_format")) {
        (Some(Value::Object(config)), _) if config.get("format").is_some_and(|f| !f.is_null()) => {
            (&config["format"], "output_config.format")
        }
        (Some(config), _) if !config.is_object() && !config.is_null() => {
            return Err(invalid("output_config: Input should be a valid dictionary"));
        }
        (_, Some(format)) if !format.is_null() => (format, "output_format"),
        _ => return Ok(None),
    };
    let Value::Object(format) = format else {
        return Err(invalid(format!("{at}: Input should be a valid dictionary")));
    };
    if format.get("type").and_then(Value::as_str) != Some("json_schema") {
        return Err(invalid(format!("{at}.type: Input should be 'json_schema'")));
    }
    match format.get("schema") {
        Some(schema) if schema.get("type").and_then(Value::as_str) == Some("object") => Ok(Some(schema.clone())),
        Some(_) => Err(invalid(format!("{at}.schema: the schema must be an object schema (`\"type\": \"object\"`)"))),
        None => Err(invalid(format!("{at}.schema: Field required"))),
    }
}

/// `max_tokens`, required and at least 1, as the API checks it (then ignored: the harness's
/// model has its own output limit).
fn max_tokens(value: Option<&Value>) -> Result<(), Error> {
    let Some(value) = value else { return Err(invalid("max_tokens: Field required")) };
    match value.as_f64().filter(|n| n.fract() == 0.0) {
        None => Err(invalid("max_tokens: Input should be a valid integer")),
        Some(n) if n < 1.0 => Err(invalid("max_tokens: Input should be greater than or equal to 1")),
        Some(_) => Ok(()),
    }
}

/// The system prompt: a string or text blocks (joined by newlines); `None` when absent or
/// empty.
fn system_text(system: &Value) -> Result<Option<String>, Error> {
    let text = match system {
        Value::Null => return Ok(None),
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            let mut texts = Vec::with_capacity(blocks.len());
            for (i, block) in blocks.iter().enumerate() {
                if block.get("type").and_then(Value::as_str) != Some("text") {
                    return Err(invalid(format!("system.{i}.type: Input should be 'text'")));
                }
                texts.push(string(block, "text", &format!("system.{i}"))?);
            }
            texts.join("\n")
        }
        _ => return Err(invalid("system: Input should be a valid string or a list of text blocks")),
    };
    Ok((!text.trim().is_empty()).then_some(text))
}

/// A required string field of a block.
fn string(block: &Value, field: &str, at: &str) -> Result<String, Error> {
    match block.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        None => Err(invalid(format!("{at}.{field}: Field required"))),
        Some(_) => Err(invalid(format!("{at}.{field}: Input should be a valid string"))),
    }
}

/// A message's content as Chat Completions content: a string, or parts.
fn parts(content: &Value, at: &str) -> Result<Value, Error> {
    match content {
        Value::String(s) => Ok(Value::String(s.clone())),
        Value::Array(blocks) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for (j, block) in blocks.iter().enumerate() {
                parts.extend(part(block, &format!("{at}.{j}"))?);
            }
            Ok(Value::Array(parts))
        }
        _ => Err(invalid(format!("{at}: Input should be a valid string or a list of content blocks"))),
    }
}

fn text_part(text: String) -> Option<Value> {
    Some(json!({"type": "text", "text": text}))
}

/// One content block as a Chat Completions part, or `None` for a block that is dropped.
fn part(block: &Value, at: &str) -> Result<Option<Value>, Error> {
    let kind = match block.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => return Err(invalid(format!("{at}.type: Input should be a valid string"))),
        None if block.is_object() => return Err(invalid(format!("{at}.type: Field required"))),
        None => return Err(invalid(format!("{at}: Input should be a valid dictionary"))),
    };
    Ok(match kind {
        "text" => text_part(string(block, "text", at)?),
        "image" => Some(image(block, at)?),
        "tool_use" => {
            let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
            let id = block.get("id").and_then(Value::as_str).unwrap_or("");
            let input = block.get("input").map(Value::to_string).unwrap_or_else(|| "{}".into());
            text_part(format!("[tool_use {name} {id}] {input}"))
        }
        "tool_result" => {
            let id = block.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
            let error = if block.get("is_error").and_then(Value::as_bool) == Some(true) { ", error" } else { "" };
            let output = result_text(block.get("content").unwrap_or(&Value::Null));
            text_part(format!("[tool_result {id}{error}] {output}"))
        }
        "document" => match block.get("source") {
            Some(source) if source.get("type").and_then(Value::as_str) == Some("text") => {
                source.get("data").and_then(Value::as_str).map(|data| json!({"type": "text", "text": data}))
            }
            _ => None,
        },
        _ => None,
    })
}

/// The text of a `tool_result`'s content: a string, or its text blocks (an image as
/// `[image]`).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map(str::to_string),
                Some("image") => Some("[image]".into()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// An `image` block as an `image_url` part with a data URL (the request map reads those).
fn image(block: &Value, at: &str) -> Result<Value, Error> {
    let source = block.get("source").ok_or_else(|| invalid(format!("{at}.source: Field required")))?;
    match source.get("type").and_then(Value::as_str) {
        Some("base64") => {}
        Some(kind @ ("url" | "file")) => {
            return Err(invalid(format!(
                "{at}.source: an image by {kind} is not taken: send it as a base64 source \
                 ({{\"type\": \"base64\", \"media_type\", \"data\"}}); superpi fetches nothing a client names"
            )));
        }
        _ => {
            return Err(invalid(format!(
                "{at}.source.type: Input tag found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'"
            )));
        }
    }
    let media_type = string(source, "media_type", &format!("{at}.source"))?;
    let data = string(source, "data", &format!("{at}.source"))?;
    Ok(json!({"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}}))
}

/// Estimated tokens of the client's tools, by the providers' rule (see [`estimate`]).
fn tools_tokens(tools: Option<&Value>) -> u64 {
    let Some(Value::Array(tools)) = tools else { return 0 };
    let field = |t: &Value, k: &str| match t.get(k) {
        Some(Value::String(s)) => text_tokens(s),
        Some(Value::Null) | None => 0,
        Some(other) => text_tokens(&other.to_string()),
    };
    tools.iter().map(|t| TOOL_OVERHEAD + field(t, "name") + field(t, "description") + field(t, "input_schema")).sum()
}

// The providers' estimate (superpi-providers' `tokens`, which the serving frontends do not
// link): three bytes a token, on the high side on purpose; a fixed cost per message, per tool
// and per image.
const BYTES_PER_TOKEN: u64 = 3;
const MESSAGE_OVERHEAD: u64 = 4;
const TOOL_OVERHEAD: u64 = 8;
const IMAGE_TOKENS: u64 = 1_600;

fn text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(BYTES_PER_TOKEN)
}

/// The estimated input tokens of a read request: its system prompt, messages and tools as the
/// client sent them (not what superpi's agent will send its model, which has its own system
/// prompt and tools).
pub fn estimate(read: &Read) -> u64 {
    let messages = read.chat.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let content = |c: &Value| match c {
        Value::String(s) => text_tokens(s),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("image_url") => IMAGE_TOKENS,
                _ => p.get("text").and_then(Value::as_str).map_or(0, text_tokens),
            })
            .sum(),
        _ => 0,
    };
    let messages: u64 =
        messages.iter().map(|m| MESSAGE_OVERHEAD + content(m.get("content").unwrap_or(&Value::Null))).sum();
    messages + read.tool_tokens
}

/// What the route needs of the gateway (server.rs implements it for `Gateway`, so this module
/// does not depend on the one that routes to it).
pub(crate) trait Door: Clone + Send + Sync + 'static {
    /// The request's principal, or the gateway's refusal.
    fn authenticate(&self, headers: &HeaderMap) -> Result<String, wire::ApiError>;
    /// The principal's kernel connection.
    fn client(&self, principal: &str) -> impl Future<Output = Result<KernelClient, ClientError>> + Send;
    /// The harnesses (`harness.list`, kept briefly).
    fn harnesses(&self, client: &KernelClient) -> impl Future<Output = Result<Vec<HarnessInfo>, ClientError>> + Send;
    /// The workspace of the conversations the gateway opens.
    fn workspace(&self) -> Option<String>;
}

/// The request's principal: the gateway's token rule, the token in `x-api-key` or
/// `Authorization: Bearer`.
fn authenticate(gw: &impl Door, headers: &HeaderMap) -> Result<String, Error> {
    gw.authenticate(headers).map_err(|err| match err.status {
        StatusCode::UNAUTHORIZED => Error::unauthorized(
            "invalid x-api-key: send one of the gateway's tokens as `x-api-key` or `Authorization: Bearer`",
        ),
        _ => from_openai(err),
    })
}

/// A body the extractor could not take (over the body limit, ...) as Anthropic's error.
fn readable(body: Result<Bytes, BytesRejection>) -> Result<Bytes, Error> {
    body.map_err(|rejection| {
        let code = if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            "request_too_large"
        } else {
            "invalid_request_error"
        };
        Error::new(rejection.status(), code, format!("unreadable body: {rejection}"))
    })
}

/// `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, an estimate ([`estimate`]). The
/// kernel is not asked.
pub(crate) async fn count_tokens<G: Door>(
    State(gw): State<G>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let counted = readable(body).and_then(|body| {
        authenticate(&gw, &headers)?;
        read(&body, &headers, true)
    });
    match counted {
        Ok(read) => axum::Json(json!({"input_tokens": estimate(&read)})).into_response(),
        Err(err) => err.into_response(),
    }
}

/// `POST /v1/messages`.
pub(crate) async fn messages<G: Door>(
    State(gw): State<G>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let answered = match readable(body) {
        Ok(body) => answer(&gw, &headers, &body).await,
        Err(err) => Err(err),
    };
    answered.unwrap_or_else(|err| {
        tracing::info!(status = %err.status, code = err.code, "messages request refused: {}", err.message);
        err.into_response()
    })
}

/// The answer's chunks as Messages SSE frames.
struct MessagesFrames(Encoder);

impl Frames for MessagesFrames {
    fn frames(&mut self, chunks: &[Chunk], end: Option<Option<&Failure>>) -> Vec<Bytes> {
        self.0.events(chunks, end).iter().map(StreamEvent::frame).collect()
    }
}

/// Where the answer arrives: SSE frames, or every chunk when the turn ends.
enum Answer {
    Stream(mpsc::Receiver<Bytes>),
    Whole(oneshot::Receiver<Result<Vec<Chunk>, wire::ApiError>>),
}

async fn answer(gw: &impl Door, headers: &HeaderMap, body: &[u8]) -> Result<Response, Error> {
    let principal = authenticate(gw, headers)?;
    let Read { chat, thinking, .. } = read(body, headers, false)?;
    let chat = serde_json::to_vec(&chat).unwrap_or_default();
    let req: ChatRequest = request::parse_chat(&chat, headers).map_err(from_openai)?;
    let kernel = |err: ClientError| from_openai(request::kernel_error(&err, &req.model));
    let client = gw.client(&principal).await.map_err(kernel)?;
    let harnesses = gw.harnesses(&client).await.map_err(kernel)?;
    // A harness id picks that harness; any other name (Claude Code's `claude-...` ids, for its
    // main loop and its side tasks alike) is the default harness with its default model.
    let target = request::resolve_model(&req.model, &harnesses);
    let mut params = request::open_params(&req, &target);
    if matches!(target, Target::Model(_)) {
        params.model = None;
    }
    params.workspace = gw.workspace();
    let info = request::open_with(&client, &req, params).await.map_err(from_openai)?;
    let conversation_id = info.conversation_id;
    let sub = client.watch(WatchParams::after(conversation_id, info.head_seq)).await.map_err(kernel)?;
    let submit = request::submission(conversation_id, request::prompt(&req, info.created), &req);
    let options = RenderOptions {
        id: String::new(),
        created: superpi_proto::event::now_ms() / 1000,
        model: req.model.clone(),
        include_usage: true,
        turn_id: 0,
    };
    let (submitted_tx, submitted_rx) = oneshot::channel();
    let (sink, answer) = if req.stream {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        (Sink::Framed(tx, Box::new(MessagesFrames(Encoder::new(thinking)))), Answer::Stream(rx))
    } else {
        let (tx, rx) = oneshot::channel();
        (Sink::Collect { chunks: Vec::new(), done: Some(tx) }, Answer::Whole(rx))
    };
    // As for a chat completion: the submit and the turn run in a task of their own, and a
    // client that leaves (this handler dropped) closes the sink, which cancels the turn.
    tokio::spawn(turn::submit_and_drive(client, sub, (submit, info.created), options, sink, submitted_tx));
    let internal = |message: &str| Error::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", message);
    let submitted = submitted_rx.await.map_err(|_| internal("the submit was lost"))?.map_err(kernel)?;
    tracing::info!(
        principal,
        conversation_id,
        turn_id = submitted.turn_id,
        created = info.created,
        stream = req.stream,
        "messages request"
    );
    let mut extra = request::answer_headers(conversation_id, &req.session);
    let rx = match answer {
        Answer::Stream(rx) => {
            let mut headers = superpi_http::sse_headers();
            headers.extend(extra);
            return Ok((StatusCode::OK, headers, superpi_http::sse_body(rx)).into_response());
        }
        Answer::Whole(rx) => rx,
    };
    let chunks = match rx.await.map_err(|_| internal("the turn ended without an answer"))? {
        Ok(chunks) => chunks,
        Err(err) => {
            // The turn ran (tools too): the Anthropic SDKs read this and do not send it again.
            extra.insert("x-should-retry", HeaderValue::from_static("false"));
            return Ok((extra, from_openai(err)).into_response());
        }
    };
    let events = Encoder::new(thinking).events(&chunks, Some(None));
    let message = message_of(&events).ok_or_else(|| internal("empty answer"))?;
    Ok((StatusCode::OK, extra, axum::Json(message)).into_response())
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;

//! The request map: a chat completion request (body and headers) into what the gateway asks
//! the kernel, and the kernel's refusals into OpenAI errors. Pure: no sockets, no kernel.

use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;
use superpi_client::{ClientError, KernelClient};
use superpi_proto::ContentBlock;
use superpi_proto::message::codes;
use superpi_proto::method::{ConversationInfo, HarnessInfo, OpenParams};

use crate::wire::{self, ApiError};

/// The modes a caller may ask for, loosest last.
pub const MODES: &[&str] = &["plan", "accept-edits", "auto"];

/// Which conversation a request runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Session {
    /// No session id: a new conversation every time.
    New,
    /// `x-session-id` / `session_id`: one conversation per principal and id, kept by the kernel.
    External(String),
    /// `x-conversation-id`: an existing conversation by id.
    Conversation(i64),
}

/// One message of the request, text only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextMessage {
    pub role: String,
    pub text: String,
}

/// A chat completion request, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model as the client named it; echoed in every answer.
    pub model: String,
    pub stream: bool,
    /// `stream_options.include_usage`: one usage chunk before `[DONE]`.
    pub include_usage: bool,
    pub session: Session,
    /// `x-superpi-mode` or `execution_mode`; the kernel keeps it under the remote ceiling.
    pub mode: Option<String>,
    pub messages: Vec<TextMessage>,
    /// Index in `messages` of the last user message.
    pub last_user: usize,
    /// The images of the last user message (`image_url` parts with data URLs), submitted
    /// with its text; earlier messages' images are not carried over.
    pub images: Vec<ContentBlock>,
    /// `response_format` (`text.format` on the Responses route) as the kernel's `output_schema`.
    pub output_schema: Option<Value>,
}

pub(crate) fn header<'a>(headers: &'a HeaderMap, names: &[&str]) -> Result<Option<&'a str>, ApiError> {
    for name in names {
        if let Some(value) = headers.get(*name) {
            let value = value.to_str().map_err(|_| ApiError::invalid(format!("header {name} is not visible ASCII")))?;
            let value = value.trim();
            if !value.is_empty() {
                return Ok(Some(value));
            }
        }
    }
    Ok(None)
}

/// The text of a message's `content`: a string, or the text parts of an array (other parts
/// are dropped here; [`content_images`] reads the images). `null` is empty.
fn content_text(content: &Value) -> Result<String, ApiError> {
    match content {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut out = String::new();
            for part in parts {
                match part {
                    Value::String(s) => out.push_str(s),
                    Value::Object(map) => {
                        let is_text = matches!(map.get("type").and_then(Value::as_str), Some("text") | None);
                        if let (true, Some(text)) = (is_text, map.get("text").and_then(Value::as_str)) {
                            if !out.is_empty() {
                                out.push('\n');
                            }
                            out.push_str(text);
                        }
                    }
                    _ => return Err(ApiError::invalid("a content part must be an object")),
                }
            }
            Ok(out)
        }
        _ => Err(ApiError::invalid("`content` must be a string, an array of parts or null")),
    }
}

/// The `image_url` parts of a message's `content`, as image blocks. Only data URLs are taken
/// (`data:image/png;base64,...`): superpi fetches no URL a client names.
fn content_images(content: &Value) -> Result<Vec<ContentBlock>, ApiError> {
    let Value::Array(parts) = content else { return Ok(Vec::new()) };
    let mut images = Vec::new();
    for part in parts {
        if part.get("type").and_then(Value::as_str) != Some("image_url") {
            continue;
        }
        // `image_url` is an object with `url` (the API's shape) or, in older clients, the URL.
        let url = part.get("image_url").and_then(|u| u.get("url").or(Some(u))).and_then(Value::as_str).unwrap_or("");
        let Some(image) = ContentBlock::image_from_data_url(url) else {
            let shown: String = url.chars().take(60).collect();
            return Err(ApiError::invalid(format!(
                "image_url `{shown}` is not a base64 data URL (data:image/png;base64,...): superpi does not fetch images"
            )));
        };
        images.push(image);
    }
    Ok(images)
}

/// The kernel's `output_schema` for an OpenAI structured-output format: `text` asks for none,
/// `json_object` for any JSON object, `json_schema` for its `schema` (an object schema; `{"type":
/// "object"}` when absent) under a `name` as OpenAI spells it. `strict` is read and left to the
/// kernel, which checks every answer. Chat Completions nests the schema's fields under
/// `json_schema` (`nested`), the Responses API's `text.format` holds them itself. `Err`: the
/// parameter at fault (`param` and below) and why.
pub fn output_format(format: &Value, param: &str, nested: bool) -> Result<Option<Value>, (String, String)> {
    let bad = |at: &str, why: &str| Err((format!("{param}{at}"), why.to_string()));
    let Value::Object(map) = format else { return bad("", "must be an object with a `type`") };
    match map.get("type").and_then(Value::as_str) {
        Some("text") => return Ok(None),
        Some("json_object") => return Ok(Some(serde_json::json!({"type": "object"}))),
        Some("json_schema") => {}
        _ => return bad(".type", "supported values are 'text', 'json_object' and 'json_schema'"),
    }
    let (spec, at) = match (nested, map.get("json_schema")) {
        (false, _) => (map, ""),
        (true, Some(Value::Object(spec))) => (spec, ".json_schema"),
        (true, _) => {
            return bad(".json_schema", "required with type 'json_schema': an object with `name` and `schema`");
        }
    };
    let name = spec.get("name").and_then(Value::as_str).unwrap_or("");
    let name_ok =
        (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return bad(&format!("{at}.name"), "required: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'");
    }
    if !matches!(spec.get("strict"), None | Some(Value::Null | Value::Bool(_))) {
        return bad(&format!("{at}.strict"), "must be a boolean");
    }
    match spec.get("schema") {
        None | Some(Value::Null) => Ok(Some(serde_json::json!({"type": "object"}))),
        Some(schema) if schema.get("type").and_then(Value::as_str) == Some("object") => Ok(Some(schema.clone())),
        Some(_) => {
            bad(&format!("{at}.schema"), "must be an object schema (`\"type\": \"object\"`): the answer is an object")
        }
    }
}

/// Reads and checks a `POST /v1/chat/completions` request. Client tools and sampling
/// parameters are accepted and ignored; `response_format` is read by [`output_format`].
pub fn parse_chat(body: &[u8], headers: &HeaderMap) -> Result<ChatRequest, ApiError> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|err| ApiError::invalid(format!("the request body is not valid JSON: {err}")))?;
    let Value::Object(body) = body else {
        return Err(ApiError::invalid("the request body must be a JSON object"));
    };
    let model = match body.get("model") {
        Some(Value::String(m)) if !m.trim().is_empty() => m.trim().to_string(),
        Some(_) => return Err(ApiError::invalid("`model` must be a non-empty string")),
        None => return Err(ApiError::invalid("`model` is required")),
    };
    let stream = match body.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ApiError::invalid("`stream` must be a boolean")),
    };
    let include_usage =
        body.get("stream_options").and_then(|o| o.get("include_usage")).and_then(Value::as_bool).unwrap_or(false);

    let Some(Value::Array(raw)) = body.get("messages") else {
        return Err(ApiError::invalid("`messages` must be an array"));
    };
    let mut messages = Vec::with_capacity(raw.len());
    for (i, m) in raw.iter().enumerate() {
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::invalid(format!("messages[{i}].role must be a string")))?;
        let text = content_text(m.get("content").unwrap_or(&Value::Null))
            .map_err(|e| ApiError::invalid(format!("messages[{i}]: {}", e.message)))?;
        messages.push(TextMessage { role: role.to_string(), text });
    }
    let last_user = messages
        .iter()
        .rposition(|m| m.role == "user")
        .ok_or_else(|| ApiError::invalid("`messages` must contain a user message"))?;
    let images = content_images(raw[last_user].get("content").unwrap_or(&Value::Null))
        .map_err(|e| ApiError::invalid(format!("messages[{last_user}]: {}", e.message)))?;
    if messages[last_user].text.trim().is_empty() && images.is_empty() {
        return Err(ApiError::invalid("the last user message has neither text nor an image"));
    }

    let session = if let Some(id) = header(headers, &["x-conversation-id"])? {
        let id = id.parse::<i64>().map_err(|_| ApiError::invalid("x-conversation-id must be an integer"))?;
        Session::Conversation(id)
    } else if let Some(id) = header(headers, &["x-session-id"])? {
        Session::External(id.to_string())
    } else {
        match body.get("session_id") {
            None | Some(Value::Null) => Session::New,
            Some(Value::String(s)) if !s.trim().is_empty() => Session::External(s.trim().to_string()),
            Some(_) => return Err(ApiError::invalid("`session_id` must be a non-empty string")),
        }
    };

    let mode = match header(headers, &["x-superpi-mode", "x-super-pi-mode"])? {
        Some(m) => Some(m.to_string()),
        None => match body.get("execution_mode") {
            None | Some(Value::Null) => None,
            Some(Value::String(m)) => Some(m.clone()),
            Some(_) => return Err(ApiError::invalid("`execution_mode` must be a string")),
        },
    };
    if let Some(m) = &mode
        && !MODES.contains(&m.as_str())
    {
        return Err(ApiError::invalid(format!("unknown mode `{m}`: use plan, accept-edits or auto")));
    }

    let output_schema = match body.get("response_format") {
        None | Some(Value::Null) => None,
        Some(format) => output_format(format, "response_format", true)
            .map_err(|(param, why)| ApiError::invalid(format!("Invalid '{param}': {why}")))?,
    };

    if is_json_object(body.get("response_format")) && !mentions_json(&messages) {
        return Err(ApiError::invalid(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
        ));
    }

    Ok(ChatRequest { model, stream, include_usage, session, mode, messages, last_user, images, output_schema })
}

/// Whether a structured-output format is `json_object`.
pub fn is_json_object(format: Option<&Value>) -> bool {
    format.and_then(|f| f.get("type")).and_then(Value::as_str) == Some("json_object")
}

/// Whether some message says "json" (any case): OpenAI refuses `json_object` otherwise, since a
/// model never told to answer in JSON may write whitespace until its output limit, and a client
/// written against OpenAI must find the same rule here.
pub fn mentions_json(messages: &[TextMessage]) -> bool {
    messages.iter().any(|m| m.text.to_ascii_lowercase().contains("json"))
}

/// What a `model` value selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A harness id: that harness with its default model.
    Harness(String),
    /// A provider's model: that model with the default harness.
    Model(String),
}

/// Resolves `model`. A harness id selects that harness with its default model (older
/// spellings `super-pi-*` and short names such as `code` are accepted). Anything else is a
/// provider model for the default harness: the kernel's `session.open` refuses a model it does
/// not serve (`model_not_found`) or whose provider has no credentials
/// (`provider_not_configured`), see [`kernel_error`].
pub fn resolve_model(model: &str, harnesses: &[HarnessInfo]) -> Target {
    let normalized = model.strip_prefix("super-pi-").map(|rest| format!("superpi-{rest}"));
    for h in harnesses {
        if h.id == model || normalized.as_deref() == Some(h.id.as_str()) || h.id.strip_prefix("superpi-") == Some(model)
        {
            return Target::Harness(h.id.clone());
        }
    }
    Target::Model(model.to_string())
}

/// The `session.open` params of a request.
pub fn open_params(req: &ChatRequest, target: &Target) -> OpenParams {
    let mut params = OpenParams { mode: req.mode.clone(), ..Default::default() };
    match target {
        Target::Harness(h) => params.harness = Some(h.clone()),
        Target::Model(m) => params.model = Some(m.clone()),
    }
    match &req.session {
        Session::New => {}
        Session::External(id) => params.external_id = Some(session_key(id, &req.messages)),
        Session::Conversation(id) => params.conversation_id = Some(*id),
    }
    params
}

/// The kernel's external id of a session: the client's session id, and when the request has a
/// system prompt, a digest of it. One client session can hold several agents with their own
/// system prompts under one id (OpenCode sends its title generator's requests with the same
/// `X-Session-Id` as its agent's); each gets its own conversation, so neither sees the other's
/// turns and no prompt is answered twice.
pub fn session_key(id: &str, messages: &[TextMessage]) -> String {
    // FNV-1a: stable across builds and releases, which a durable key needs.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut any = false;
    for m in messages.iter().filter(|m| m.role == "system" || m.role == "developer") {
        any = true;
        for byte in m.text.as_bytes().iter().chain(b"\0") {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    if any { format!("{id}#{hash:016x}") } else { id.to_string() }
}

/// The submit of a request's prompt, images and output schema to its conversation (an empty
/// prompt sends the images alone).
pub fn submission(conversation_id: i64, prompt: String, req: &ChatRequest) -> superpi_proto::method::SubmitParams {
    let mut content = Vec::with_capacity(1 + req.images.len());
    if !prompt.trim().is_empty() {
        content.push(ContentBlock::text(prompt));
    }
    content.extend(req.images.iter().cloned());
    let output_schema = req.output_schema.clone();
    superpi_proto::method::SubmitParams { conversation_id, content, output_schema, ..Default::default() }
}

/// The prompt to submit. A conversation this request created gets the messages before the
/// last user message as a transcript ahead of it, so the agent sees what the client says was
/// said; an existing conversation already holds its history and gets the last user message.
pub fn prompt(req: &ChatRequest, created: bool) -> String {
    let last = &req.messages[req.last_user].text;
    let earlier: Vec<&TextMessage> =
        req.messages[..req.last_user].iter().filter(|m| !m.text.trim().is_empty()).collect();
    if !created || earlier.is_empty() {
        return last.clone();
    }
    let mut out = String::from("[Earlier messages of this conversation, as the client sent them]\n");
    for m in earlier {
        out.push_str(&m.role);
        out.push_str(": ");
        out.push_str(&m.text);
        out.push('\n');
    }
    out.push_str("[End of earlier messages]\n\n");
    out.push_str(last);
    out
}

/// A kernel refusal as an OpenAI error. `model` is the requested model, for the message.
pub fn kernel_error(err: &ClientError, model: &str) -> ApiError {
    let ClientError::Kernel(e) = err else {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "kernel_unavailable",
            format!("the superpi kernel is not reachable: {err}"),
        );
    };
    match e.code {
        codes::PROVIDER => {
            let reason = e.data.as_ref().and_then(|d| d.get("reason")).and_then(Value::as_str).unwrap_or("");
            let text = e.message.to_ascii_lowercase();
            let unconfigured = reason == "provider_not_configured"
                || (reason.is_empty()
                    && ["not configured", "credential", "api key", "no key"].iter().any(|w| text.contains(w)));
            if unconfigured { wire::provider_not_configured(e.message.clone()) } else { wire::model_not_found(model) }
        }
        codes::INVALID_PARAMS => ApiError::invalid(e.message.clone()),
        codes::FORBIDDEN => ApiError::new(StatusCode::FORBIDDEN, "forbidden", e.message.clone()),
        codes::NOT_FOUND => ApiError::not_found(e.message.clone()),
        codes::UNAUTHORIZED => ApiError::unauthorized(e.message.clone()),
        codes::RATE_LIMITED => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", e.message.clone()),
        _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", e.message.clone()),
    }
}

/// The headers an answer carries: its conversation, and the client's own session id.
pub(crate) fn answer_headers(conversation_id: i64, session: &Session) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(v) = axum::http::HeaderValue::from_str(&conversation_id.to_string()) {
        headers.insert("x-superpi-conversation-id", v);
    }
    if let Session::External(id) = session
        && let Ok(v) = axum::http::HeaderValue::from_str(id)
    {
        headers.insert("x-session-id", v);
    }
    headers
}

/// Opens (or finds) the request's conversation with these `session.open` params, and sets the
/// mode the request asks for on one that existed.
pub(crate) async fn open_with(
    client: &KernelClient,
    req: &ChatRequest,
    params: OpenParams,
) -> Result<ConversationInfo, ApiError> {
    let info = match client.open(params.clone()).await {
        // Another principal's conversation reads as one that does not exist: a new one.
        Err(err) if err.code() == Some(codes::NOT_FOUND) && matches!(req.session, Session::Conversation(_)) => {
            client.open(OpenParams { conversation_id: None, ..params }).await
        }
        other => other,
    }
    .map_err(|e| kernel_error(&e, &req.model))?;
    if let Some(mode) = &req.mode
        && !info.created
        && &info.mode != mode
    {
        client.set_mode(info.conversation_id, mode).await.map_err(|e| kernel_error(&e, &req.model))?;
    }
    Ok(info)
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;

//! The request map of `POST /v1/responses`: a Responses API request (body and headers) into the
//! chat request the gateway already knows how to run ([`ChatRequest`]: model, session, mode,
//! messages, the last user message's images), plus what only this API has: the response to
//! continue (`previous_response_id`) and `instructions`. Pure: no sockets, no kernel.
//!
//! A response id names its conversation and turn (`resp_<conversation>_<turn>`), so a later
//! request finds the conversation again from the id alone, across restarts of the gateway and
//! of the kernel, with nothing stored beside the conversation; the kernel's `session.open`
//! refuses another principal's conversation, so another token cannot continue it.

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value};
use superpi_proto::ContentBlock;

use super::ResponsesError;
use crate::request::{ChatRequest, MODES, Session, TextMessage, header};

/// The prefix of a response id.
pub const RESPONSE_PREFIX: &str = "resp_";

/// A Responses request, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesRequest {
    /// What the chat route would run: `messages` are the input items' messages (with
    /// `instructions` first as a `system` message when the request may start a conversation).
    pub chat: ChatRequest,
    /// `previous_response_id`, read: the conversation to continue.
    pub previous: Option<Previous>,
    pub instructions: Option<String>,
    /// `metadata`, echoed in the response (an object of strings, else dropped).
    pub metadata: Option<Map<String, Value>>,
    /// `text.format` as sent, once checked: echoed in the response.
    pub text_format: Option<Value>,
}

/// The response a request continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    /// The id as the client sent it (echoed as the response's `previous_response_id`).
    pub id: String,
    pub conversation_id: i64,
}

/// The id of the response of `turn_id` in `conversation_id`.
pub fn response_id(conversation_id: i64, turn_id: i64) -> String {
    format!("{RESPONSE_PREFIX}{conversation_id}_{turn_id}")
}

/// The conversation a response id names (`None`: not an id this gateway gave out).
pub fn conversation_of(id: &str) -> Option<i64> {
    let (conversation, turn) = id.strip_prefix(RESPONSE_PREFIX)?.split_once('_')?;
    let conversation = conversation.parse::<i64>().ok().filter(|c| *c > 0)?;
    turn.parse::<i64>().ok().filter(|t| *t > 0)?;
    // Only the canonical spelling: `resp_01_2` or `resp_+1_2` is not an id given out.
    (response_id(conversation, turn.parse().ok()?) == id).then_some(conversation)
}

/// 400 naming the parameter.
fn invalid(param: impl Into<String>, message: impl Into<String>) -> ResponsesError {
    ResponsesError::invalid(message).param(param)
}

/// `previous_response_id` names no response this principal can continue: OpenAI's answer for an
/// unknown id (400 `previous_response_not_found`).
pub fn previous_not_found(id: &str) -> ResponsesError {
    ResponsesError::new(
        StatusCode::BAD_REQUEST,
        "previous_response_not_found",
        format!("Previous response with id '{id}' not found."),
    )
    .param("previous_response_id")
}

fn optional_string(body: &Map<String, Value>, key: &str) -> Result<Option<String>, ResponsesError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(key, format!("`{key}` must be a string"))),
    }
}

/// Item types a client sends only after running a tool the model asked it to run. superpi's
/// agent runs its own tools in the kernel's sandbox and never asks a client to run one.
const TOOL_OUTPUTS: &[&str] = &[
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "shell_call_output",
    "apply_patch_call_output",
    "computer_call_output",
    "mcp_approval_response",
];

/// One message of `input`: its role, text and images.
struct InputMessage {
    role: String,
    text: String,
    images: Vec<ContentBlock>,
}

/// A message's `content`: a string, or parts (`input_text`, `output_text` and `text` are read,
/// `input_image` with a data URL is an image; files, audio and refusals are dropped).
fn content(content: &Value, at: &str) -> Result<(String, Vec<ContentBlock>), ResponsesError> {
    let parts = match content {
        Value::String(s) => return Ok((s.clone(), Vec::new())),
        Value::Array(parts) => parts,
        _ => return Err(invalid(format!("{at}.content"), "`content` must be a string or an array of parts")),
    };
    let mut text = String::new();
    let mut images = Vec::new();
    for (j, part) in parts.iter().enumerate() {
        let at = format!("{at}.content[{j}]");
        let Value::Object(part) = part else {
            return Err(invalid(at, "a content part must be an object"));
        };
        match part.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text" | "text") => {
                let Some(t) = part.get("text").and_then(Value::as_str) else {
                    return Err(invalid(format!("{at}.text"), "a text part needs `text`, a string"));
                };
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(t);
            }
            Some("input_image") => images.push(image(part, &at)?),
            Some(_) => {}
            None => return Err(invalid(format!("{at}.type"), "a content part needs `type`")),
        }
    }
    Ok((text, images))
}

/// An `input_image` part: only a base64 data URL is taken (superpi fetches no URL a client
/// names, and keeps no files).
fn image(part: &Map<String, Value>, at: &str) -> Result<ContentBlock, ResponsesError> {
    let url = match part.get("image_url") {
        Some(Value::String(url)) => url.as_str(),
        _ if part.get("file_id").is_some_and(|f| !f.is_null()) => {
            return Err(invalid(format!("{at}.file_id"), "file ids are not served: send the image as a data URL"));
        }
        _ => return Err(invalid(format!("{at}.image_url"), "an input_image needs `image_url`, a data URL")),
    };
    ContentBlock::image_from_data_url(url).ok_or_else(|| {
        let shown: String = url.chars().take(60).collect();
        invalid(
            format!("{at}.image_url"),
            format!(
                "image_url `{shown}` is not a base64 data URL (data:image/png;base64,...): superpi does not fetch images"
            ),
        )
    })
}

/// The messages of `input`: a string is one user message; an array holds messages (with or
/// without `"type": "message"`) and other items. Reasoning items and the outputs' other items
/// (an earlier answer's calls) are skipped; a tool's output is refused.
fn input_messages(input: &Value) -> Result<Vec<InputMessage>, ResponsesError> {
    let items = match input {
        Value::String(s) => return Ok(vec![InputMessage { role: "user".into(), text: s.clone(), images: Vec::new() }]),
        Value::Array(items) => items,
        _ => return Err(invalid("input", "`input` must be a string or an array of items")),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        let Value::Object(item) = item else {
            return Err(invalid(at, "an input item must be an object"));
        };
        let kind = match item.get("type") {
            None | Some(Value::Null) => "message",
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => return Err(invalid(format!("{at}.type"), "`type` must be a string")),
        };
        if TOOL_OUTPUTS.contains(&kind) {
            return Err(invalid(
                at.clone(),
                format!(
                    "{at} is a {kind} item: superpi's agent runs its own tools in the kernel's sandbox and never asks \
                     a client to run one, so there is no call to answer (client `tools` are ignored)"
                ),
            ));
        }
        if kind != "message" {
            continue;
        }
        let role = match item.get("role").and_then(Value::as_str) {
            Some(role @ ("user" | "assistant" | "system" | "developer")) => role.to_string(),
            Some(role) => {
                return Err(invalid(
                    format!("{at}.role"),
                    format!("unknown role `{role}`: use user, assistant, system or developer"),
                ));
            }
            None => return Err(invalid(format!("{at}.role"), "a message needs `role`, a string")),
        };
        let (text, images) = content(item.get("content").unwrap_or(&Value::Null), &at)?;
        out.push(InputMessage { role, text, images });
    }
    Ok(out)
}

/// Reads and checks a `POST /v1/responses` request. Client `tools`, `tool_choice`, sampling
/// parameters, `reasoning`, `include`, `store` and `truncation` are accepted and ignored; `text`'s
/// `format` is the turn's output schema ([`crate::request::output_format`]).
pub fn parse(body: &[u8], headers: &HeaderMap) -> Result<ResponsesRequest, ResponsesError> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|err| ResponsesError::invalid(format!("the request body is not valid JSON: {err}")))?;
    let Value::Object(body) = body else {
        return Err(ResponsesError::invalid("the request body must be a JSON object"));
    };
    let model = match body.get("model") {
        Some(Value::String(m)) if !m.trim().is_empty() => m.trim().to_string(),
        Some(_) => return Err(invalid("model", "`model` must be a non-empty string")),
        None => return Err(invalid("model", "`model` is required")),
    };
    let stream = match body.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("stream", "`stream` must be a boolean")),
    };
    if body.get("background").and_then(Value::as_bool) == Some(true) {
        return Err(invalid(
            "background",
            "background responses are not served: the gateway answers while the turn runs",
        ));
    }
    if body.get("conversation").is_some_and(|c| !c.is_null()) {
        return Err(invalid(
            "conversation",
            "the Conversations API is not served: continue with `previous_response_id` or an x-session-id header",
        ));
    }
    let instructions = optional_string(&body, "instructions")?;
    let previous = match optional_string(&body, "previous_response_id")? {
        None => None,
        Some(id) => {
            let conversation_id = conversation_of(&id).ok_or_else(|| previous_not_found(&id))?;
            Some(Previous { id, conversation_id })
        }
    };
    let metadata = match body.get("metadata") {
        Some(Value::Object(m)) if m.values().all(Value::is_string) => Some(m.clone()),
        _ => None,
    };

    let Some(input) = body.get("input").filter(|i| !i.is_null()) else {
        return Err(invalid("input", "`input` is required: a string or an array of items"));
    };
    let mut items = input_messages(input)?;
    let last_user = items
        .iter()
        .rposition(|m| m.role == "user")
        .ok_or_else(|| invalid("input", "`input` must contain a user message"))?;
    let images = std::mem::take(&mut items[last_user].images);
    if items[last_user].text.trim().is_empty() && images.is_empty() {
        return Err(invalid(format!("input[{last_user}]"), "the last user message has neither text nor an image"));
    }
    // `instructions` stand first, as a system message: the seed of a new conversation and part
    // of a session's key. A continued response's conversation already holds what it was told.
    let mut messages: Vec<TextMessage> = Vec::with_capacity(items.len() + 1);
    if let (Some(text), None) = (&instructions, &previous) {
        messages.push(TextMessage { role: "system".into(), text: text.clone() });
    }
    let offset = messages.len();
    messages.extend(items.into_iter().map(|m| TextMessage { role: m.role, text: m.text }));

    // Sessions as on the chat route; Codex sends its thread id as `session-id`.
    let session = if previous.is_some() {
        Session::New
    } else if let Some(id) = header(headers, &["x-session-id", "session-id"])? {
        Session::External(id.to_string())
    } else {
        match body.get("session_id") {
            None | Some(Value::Null) => Session::New,
            Some(Value::String(s)) if !s.trim().is_empty() => Session::External(s.trim().to_string()),
            Some(_) => return Err(invalid("session_id", "`session_id` must be a non-empty string")),
        }
    };
    let mode = match header(headers, &["x-superpi-mode", "x-super-pi-mode"])? {
        Some(m) => Some(m.to_string()),
        None => optional_string(&body, "execution_mode")?,
    };
    if let Some(m) = &mode
        && !MODES.contains(&m.as_str())
    {
        return Err(ResponsesError::invalid(format!("unknown mode `{m}`: use plan, accept-edits or auto")));
    }

    let text_format = body.get("text").and_then(|t| t.get("format")).filter(|f| !f.is_null()).cloned();
    let output_schema = match &text_format {
        None => None,
        Some(format) => crate::request::output_format(format, "text.format", false)
            .map_err(|(param, why)| invalid(param.clone(), format!("Invalid '{param}': {why}")))?,
    };
    if crate::request::is_json_object(text_format.as_ref()) && !crate::request::mentions_json(&messages) {
        return Err(invalid(
            "input",
            "Response input messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'.",
        ));
    }
    let chat = ChatRequest {
        model,
        stream,
        include_usage: true,
        session,
        mode,
        messages,
        last_user: offset + last_user,
        images,
        output_schema,
    };
    Ok(ResponsesRequest { chat, previous, instructions, metadata, text_format })
}

/// The prompt to submit: as the chat route's ([`crate::request::prompt`]), where a request that
/// continues a response counts as new: everything in its `input` is new to the conversation.
pub fn prompt(req: &ResponsesRequest, created: bool) -> String {
    crate::request::prompt(&req.chat, created || req.previous.is_some())
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;

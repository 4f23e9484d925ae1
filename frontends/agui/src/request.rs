//! The request map: AG-UI request bodies into what the kernel is asked, and this frontend's
//! error shape, `{"error": {"message", "code"}}` with an HTTP status.

use axum::http::StatusCode;
use serde_json::{Value, json};
use superpi_client::ClientError;
use superpi_http::ErrorShape;
use superpi_proto::ContentBlock;
use superpi_proto::message::codes;
use superpi_proto::question::QuestionAnswer;

use crate::wire::{ClientTool, InputRequest, ResumeEntry, RunAgentInput};

/// The modes a client may ask for in `forwardedProps.executionMode`, loosest last.
pub const MODES: &[&str] = &["plan", "accept-edits", "auto"];

/// This frontend's error body: `{"error": {"message", "code"}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AguiShape;

impl ErrorShape for AguiShape {
    const INVALID: &'static str = "invalid_request";
    const UNAUTHORIZED: &'static str = "unauthorized";

    fn body(error: &ApiError) -> Value {
        json!({"error": {"message": error.message, "code": error.code}})
    }
}

/// An error answered as JSON in AG-UI's shape.
pub type ApiError = superpi_http::ApiError<AguiShape>;

/// What a run asks of the kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    pub thread_id: String,
    pub run_id: String,
    pub harness: Option<String>,
    pub mode: Option<String>,
    /// The last user message, with the context items after it.
    pub prompt: String,
    /// `(role, text)` of the messages before it that carry text.
    pub earlier: Vec<(String, String)>,
    /// The images of the last user message, submitted with its text.
    pub images: Vec<ContentBlock>,
    /// The client speaks AG-UI 1.0 or later (its `protocolVersion`): questions end the run
    /// as interrupts.
    pub interrupts: bool,
    /// The tools the client offers and runs (`RunAgentInput.tools`).
    pub client_tools: Vec<ClientTool>,
    /// What this run continues: answers to the last run's interrupts and results of the
    /// client tools it called. A run that carries any submits no prompt.
    pub resume: Vec<Answer>,
    pub tool_results: Vec<ToolResult>,
}

/// An answer to an interrupt: the kernel's question, where its turn stood, the option (for
/// a permission) or the `ui.respond` outcome (for the model's question).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub request_id: String,
    pub turn_id: i64,
    pub seq: u64,
    pub option_id: String,
    pub question: Option<Value>,
}

/// What starts the request id of a question's interrupt (a permission's has none).
pub const QUESTION: &str = "question:";

/// A client tool's result, from a trailing `tool` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// An interrupt's id: the kernel's request id, then the turn and the seq of the question, so
/// the run that resumes it follows that turn from there (`perm-HEX@TURN:SEQ`).
pub fn interrupt_id(request_id: &str, turn_id: i64, seq: u64) -> String {
    format!("{request_id}@{turn_id}:{seq}")
}

/// Reads a resume entry: `resolved` with `{"optionId"}` (or the option id as a string)
/// answers; `cancelled` refuses the call (`reject_once`).
fn answer(entry: &ResumeEntry) -> Result<Answer, ApiError> {
    let bad = || ApiError::invalid(format!("resume: `{}` is not an interrupt of this server", entry.interrupt_id));
    let (request_id, at) = entry.interrupt_id.rsplit_once('@').ok_or_else(bad)?;
    let (turn, seq) = at.split_once(':').ok_or_else(bad)?;
    let (turn_id, seq) = (turn.parse().map_err(|_| bad())?, seq.parse().map_err(|_| bad())?);
    if let Some(request_id) = request_id.strip_prefix(QUESTION) {
        // The payload is the answers, an object the interrupt's response schema describes.
        let outcome = match (entry.status.as_str(), entry.payload.as_ref()) {
            ("cancelled", _) => QuestionAnswer::Decline,
            ("resolved", Some(Value::Object(answers))) => QuestionAnswer::Accept(answers.clone()),
            ("resolved", _) => return Err(ApiError::invalid("resume: a question's payload is its answers, an object")),
            (status, _) => return Err(ApiError::invalid(format!("resume: status `{status}` is not an answer"))),
        };
        let question = Some(outcome.to_outcome());
        return Ok(Answer { request_id: request_id.to_string(), turn_id, seq, option_id: String::new(), question });
    }
    let option_id = match (entry.status.as_str(), entry.payload.as_ref()) {
        ("cancelled", _) => "reject_once".to_string(),
        ("resolved", Some(Value::String(option))) => option.clone(),
        ("resolved", Some(payload)) => match payload.get("optionId").and_then(Value::as_str) {
            Some(option) => option.to_string(),
            None => return Err(ApiError::invalid("resume: a resolved entry's payload needs `optionId`")),
        },
        (status, _) => {
            return Err(ApiError::invalid(format!(
                "resume: status must be `resolved` (with a payload) or `cancelled`, not `{status}`"
            )));
        }
    };
    Ok(Answer { request_id: request_id.to_string(), turn_id, seq, option_id, question: None })
}

/// The `tool` messages that end `messages`: results of client tools.
fn trailing_tool_results(messages: &[Value]) -> Vec<ToolResult> {
    let start = messages.iter().rposition(|m| m.get("role").and_then(Value::as_str) != Some("tool"));
    let from = start.map_or(0, |at| at + 1);
    messages[from..]
        .iter()
        .filter_map(|m| {
            let tool_call_id = m.get("toolCallId").and_then(Value::as_str)?.to_string();
            let error = m.get("error").and_then(Value::as_str).filter(|e| !e.is_empty());
            let mut content = message_text(m);
            if content.is_empty()
                && let Some(error) = error
            {
                content = error.to_string();
            }
            Some(ToolResult { tool_call_id, content, is_error: error.is_some() })
        })
        .collect()
}

impl RunPlan {
    /// What to submit. A conversation this run created gets the earlier messages as a
    /// transcript ahead of the prompt, so the agent sees what the client says was said; an
    /// existing conversation already holds its history.
    pub fn prompt_for(&self, created: bool) -> String {
        if !created || self.earlier.is_empty() {
            return self.prompt.clone();
        }
        let mut out = String::from("[Earlier messages of this conversation, as the client sent them]\n");
        for (role, text) in &self.earlier {
            out.push_str(&format!("{role}: {text}\n"));
        }
        out.push_str("[End of earlier messages]\n\n");
        out.push_str(&self.prompt);
        out
    }
}

/// Reads a `RunAgentInput`. The prompt is the last user message (the kernel holds the
/// history); the `context` items follow it; client state is not used. A run that answers
/// interrupts (`resume`) or ends with results of client tools continues the turn that waits
/// for them and submits nothing.
pub fn run_plan(body: &[u8]) -> Result<RunPlan, ApiError> {
    let input: RunAgentInput =
        serde_json::from_slice(body).map_err(|err| ApiError::invalid(format!("not a RunAgentInput: {err}")))?;
    if input.thread_id.trim().is_empty() {
        return Err(ApiError::invalid("threadId must not be empty"));
    }
    if input.run_id.trim().is_empty() {
        return Err(ApiError::invalid("runId must not be empty"));
    }
    let props = input.forwarded_props.as_ref();
    let harness = optional_string(props, "harness")?;
    let mode = optional_string(props, "executionMode")?;
    if let Some(mode) = &mode
        && !MODES.contains(&mode.as_str())
    {
        return Err(ApiError::invalid(format!("executionMode must be one of {}, not `{mode}`", MODES.join(", "))));
    }
    let resume = input.resume.iter().map(answer).collect::<Result<Vec<_>, _>>()?;
    let tool_results = trailing_tool_results(&input.messages);
    if let Some(tool) = input.client_tools_invalid() {
        return Err(ApiError::invalid(tool));
    }
    let major = input.protocol_version.as_deref().and_then(|v| v.split('.').next()?.trim().parse::<u32>().ok());
    let interrupts = major.is_some_and(|major| major >= 1);
    let continues = !resume.is_empty() || !tool_results.is_empty();
    let last_user = input.messages.iter().rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    let last_user = match last_user {
        Some(at) => at,
        None if continues => input.messages.len(),
        None => return Err(ApiError::invalid("messages holds no user message")),
    };
    let earlier = input.messages[..last_user]
        .iter()
        .filter_map(|m| {
            let role = m.get("role").and_then(Value::as_str)?;
            let text = message_text(m);
            (["user", "assistant", "system", "developer"].contains(&role) && !text.trim().is_empty())
                .then(|| (role.to_string(), text))
        })
        .collect();
    let last = input.messages.get(last_user).unwrap_or(&Value::Null);
    let mut prompt = message_text(last);
    let images = if continues { Vec::new() } else { message_images(last)? };
    if prompt.trim().is_empty() && images.is_empty() && !continues {
        return Err(ApiError::invalid("the last user message has neither text nor an image"));
    }
    if !input.context.is_empty() {
        prompt.push_str("\n\nContext:");
        for item in &input.context {
            prompt.push_str(&format!("\n- {}: {}", item.description, item.value));
        }
    }
    let client_tools = input.tools;
    Ok(RunPlan {
        thread_id: input.thread_id,
        run_id: input.run_id,
        harness,
        mode,
        prompt,
        earlier,
        images,
        interrupts,
        client_tools,
        resume,
        tool_results,
    })
}

fn optional_string(props: Option<&Value>, key: &str) -> Result<Option<String>, ApiError> {
    match props.and_then(|p| p.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::invalid(format!("forwardedProps.{key} must be a non-empty string"))),
    }
}

/// The text of a message: a string content, or the text parts of an array.
fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The images of a message's content parts: AG-UI's `image` parts (`source` of type `data`
/// with `value` and `mimeType`, or of type `url` with a data URL) and the older `binary` parts
/// (`mimeType` and `data`, or a data URL in `url`). superpi fetches no URL a client names.
fn message_images(message: &Value) -> Result<Vec<ContentBlock>, ApiError> {
    let Some(Value::Array(parts)) = message.get("content") else { return Ok(Vec::new()) };
    let mut images = Vec::new();
    for part in parts {
        let str_at = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        let (kind, mime_type, data, url) = match part.get("type").and_then(Value::as_str) {
            Some("image") => {
                let source = part.get("source").unwrap_or(&Value::Null);
                let value = str_at(source, "value");
                let (data, url) = match source.get("type").and_then(Value::as_str) {
                    Some("data") => (value, None),
                    _ => (None, value),
                };
                ("image", str_at(source, "mimeType"), data, url)
            }
            Some("binary") => ("binary", str_at(part, "mimeType"), str_at(part, "data"), str_at(part, "url")),
            _ => continue,
        };
        let image = match (mime_type, data, url) {
            (Some(mime_type), Some(data), _) if mime_type.starts_with("image/") => ContentBlock::image(mime_type, data),
            (_, None, Some(url)) if url.starts_with("data:image/") => ContentBlock::image_from_data_url(&url)
                .ok_or_else(|| ApiError::invalid("an image's data URL must be base64 (data:image/png;base64,...)"))?,
            (Some(mime_type), _, _) if !mime_type.starts_with("image/") => {
                return Err(ApiError::invalid(format!("a {kind} part of type {mime_type} is not taken: only images")));
            }
            _ => {
                return Err(ApiError::invalid(format!(
                    "an {kind} part needs its bytes (base64 data or a data URL): superpi does not fetch images"
                )));
            }
        };
        images.push(image);
    }
    Ok(images)
}

/// Reads the body of the input route.
pub fn input_request(body: &[u8]) -> Result<InputRequest, ApiError> {
    let request: InputRequest = serde_json::from_slice(body).map_err(|err| {
        ApiError::invalid(format!(
            "expected {{\"type\": \"prompt\" | \"permission\" | \"answer\" | \"cancel\", ...}}: {err}"
        ))
    })?;
    if let InputRequest::Prompt { prompt, .. } = &request
        && prompt.trim().is_empty()
    {
        return Err(ApiError::invalid("prompt must not be empty"));
    }
    Ok(request)
}

/// Whether `requested` is no looser than `current` (a client may only tighten the mode of
/// an existing conversation).
pub fn tightens(requested: &str, current: &str) -> bool {
    let rank = |m: &str| MODES.iter().position(|x| *x == m);
    match (rank(requested), rank(current)) {
        (Some(r), Some(c)) => r < c,
        _ => false,
    }
}

/// A kernel failure as an HTTP answer.
pub fn kernel_error(err: &ClientError) -> ApiError {
    match err {
        ClientError::Kernel(e) if e.code == codes::NOT_FOUND => ApiError::not_found(e.message.clone()),
        ClientError::Kernel(e) if e.code == codes::INVALID_PARAMS => ApiError::invalid(e.message.clone()),
        ClientError::Kernel(e) if e.code == codes::FORBIDDEN => {
            ApiError::new(StatusCode::FORBIDDEN, "forbidden", e.message.clone())
        }
        ClientError::Kernel(e) if e.code == codes::PROVIDER => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "provider_not_configured", e.message.clone())
        }
        ClientError::Kernel(e) => ApiError::new(StatusCode::BAD_GATEWAY, "kernel_error", e.message.clone()),
        ClientError::Closed | ClientError::NoKernel(_) | ClientError::Io(_) => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "kernel_unavailable", err.to_string())
        }
        ClientError::Protocol(_) => ApiError::new(StatusCode::BAD_GATEWAY, "kernel_error", err.to_string()),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;

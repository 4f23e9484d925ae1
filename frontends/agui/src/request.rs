//! The request map: AG-UI request bodies into what the kernel is asked, and this frontend's
//! error shape, `{"error": {"message", "code"}}` with an HTTP status.

use axum::http::StatusCode;
use serde_json::{Value, json};
use superpi_client::ClientError;
use superpi_http::ErrorShape;
use superpi_proto::ContentBlock;
use superpi_proto::message::codes;

use crate::wire::{InputRequest, RunAgentInput};

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
/// history); the `context` items follow it. Client tools and client state are not used.
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
    let last_user = input
        .messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .ok_or_else(|| ApiError::invalid("messages holds no user message"))?;
    let earlier = input.messages[..last_user]
        .iter()
        .filter_map(|m| {
            let role = m.get("role").and_then(Value::as_str)?;
            let text = message_text(m);
            (["user", "assistant", "system", "developer"].contains(&role) && !text.trim().is_empty())
                .then(|| (role.to_string(), text))
        })
        .collect();
    let mut prompt = message_text(&input.messages[last_user]);
    let images = message_images(&input.messages[last_user])?;
    if prompt.trim().is_empty() && images.is_empty() {
        return Err(ApiError::invalid("the last user message has neither text nor an image"));
    }
    if !input.context.is_empty() {
        prompt.push_str("\n\nContext:");
        for item in &input.context {
            prompt.push_str(&format!("\n- {}: {}", item.description, item.value));
        }
    }
    Ok(RunPlan { thread_id: input.thread_id, run_id: input.run_id, harness, mode, prompt, earlier, images })
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
mod tests {
    use super::*;

    #[test]
    fn a_run_takes_the_last_user_message_and_the_forwarded_props() {
        let body = json!({
            "threadId": "t1",
            "runId": "r1",
            "messages": [
                {"id": "1", "role": "user", "content": "first"},
                {"id": "2", "role": "assistant", "content": "ok"},
                {"id": "3", "role": "user", "content": [
                    {"type": "text", "text": "second"},
                    {"type": "image", "source": {"type": "data", "value": "iVBORw0K", "mimeType": "image/png"}},
                    {"type": "binary", "mimeType": "image/jpeg", "data": "/9j/"},
                    {"type": "image", "source": {"type": "url", "value": "data:image/webp;base64,UklG"}},
                ]},
            ],
            "tools": [],
            "context": [{"description": "user", "value": "Ada"}],
            "state": {},
            "forwardedProps": {"harness": "superpi-planner", "executionMode": "plan"},
        });
        assert_eq!(
            run_plan(body.to_string().as_bytes()),
            Ok(RunPlan {
                thread_id: "t1".into(),
                run_id: "r1".into(),
                harness: Some("superpi-planner".into()),
                mode: Some("plan".into()),
                prompt: "second\n\nContext:\n- user: Ada".into(),
                earlier: vec![("user".into(), "first".into()), ("assistant".into(), "ok".into())],
                images: vec![
                    ContentBlock::image("image/png", "iVBORw0K"),
                    ContentBlock::image("image/jpeg", "/9j/"),
                    ContentBlock::image("image/webp", "UklG"),
                ],
            })
        );
        let plan = run_plan(body.to_string().as_bytes()).unwrap();
        assert_eq!(plan.prompt_for(false), "second\n\nContext:\n- user: Ada");
        assert_eq!(
            plan.prompt_for(true),
            "[Earlier messages of this conversation, as the client sent them]\n\
             user: first\nassistant: ok\n[End of earlier messages]\n\nsecond\n\nContext:\n- user: Ada"
        );
    }

    #[test]
    fn bad_runs_are_invalid_requests() {
        let cases = [
            ("not json", "not a RunAgentInput"),
            (r#"{"threadId": "t", "runId": "r"}"#, "not a RunAgentInput"),
            (r#"{"threadId": "", "runId": "r", "messages": []}"#, "threadId must not be empty"),
            (r#"{"threadId": "t", "runId": "r", "messages": []}"#, "no user message"),
            (
                r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x"}], "forwardedProps": {"executionMode": "yolo"}}"#,
                "executionMode must be one of",
            ),
            (
                r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x"}], "forwardedProps": {"harness": 3}}"#,
                "forwardedProps.harness",
            ),
            (
                r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "value": "https://x/a.png"}}]}]}"#,
                "superpi does not fetch images",
            ),
            (
                r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": [{"type": "binary", "mimeType": "application/pdf", "data": "JVBE"}]}]}"#,
                "only images",
            ),
            (
                r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": [{"type": "text", "text": " "}]}]}"#,
                "neither text nor an image",
            ),
        ];
        for (body, needle) in cases {
            let err = run_plan(body.as_bytes()).unwrap_err();
            assert_eq!((err.status.as_u16(), err.code), (400, "invalid_request"), "{body}");
            assert!(err.message.contains(needle), "{body}: {}", err.message);
        }
    }

    #[test]
    fn input_bodies() {
        assert_eq!(
            input_request(br#"{"type": "permission", "requestId": "q1", "optionId": "allow_once"}"#),
            Ok(InputRequest::Permission { request_id: "q1".into(), option_id: "allow_once".into() })
        );
        assert_eq!(
            input_request(br#"{"type": "answer", "requestId": "q1", "answer": "reject_once"}"#),
            Ok(InputRequest::Answer { request_id: "q1".into(), answer: "reject_once".into() })
        );
        assert_eq!(input_request(br#"{"type": "cancel"}"#), Ok(InputRequest::Cancel {}));
        assert_eq!(
            input_request(br#"{"type": "prompt", "prompt": "hi"}"#),
            Ok(InputRequest::Prompt { prompt: "hi".into(), steer: false })
        );
        assert_eq!(
            input_request(br#"{"type": "prompt", "prompt": "hi", "steer": true}"#),
            Ok(InputRequest::Prompt { prompt: "hi".into(), steer: true })
        );
        for bad in
            [&br#"{"type": "prompt", "prompt": " "}"#[..], br#"{"type": "nope"}"#, b"[]", br#"{"type": "permission"}"#]
        {
            assert_eq!(input_request(bad).unwrap_err().status, 400);
        }
    }

    #[test]
    fn modes_only_tighten() {
        assert!(tightens("plan", "auto"));
        assert!(tightens("accept-edits", "auto"));
        assert!(!tightens("auto", "plan"));
        assert!(!tightens("plan", "plan"));
        assert!(!tightens("weird", "auto"));
    }
}

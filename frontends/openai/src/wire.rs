//! The OpenAI Chat Completions wire types this gateway writes, and its error shape.

use axum::http::StatusCode;
use serde::Serialize;
use superpi_http::ErrorShape;

/// `usage` of a completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Usage { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }
    }
}

/// The `delta` of a streamed choice.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    pub finish_reason: Option<&'static str>,
}

/// One `chat.completion.chunk`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chunk {
    pub id: String,
    pub object: &'static str,
    pub created: i64,
    pub model: String,
    pub choices: Vec<ChunkChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// The `message` of a whole completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AssistantMessage {
    pub role: &'static str,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompletionChoice {
    pub index: u32,
    pub message: AssistantMessage,
    pub finish_reason: Option<&'static str>,
}

/// A whole `chat.completion` (stream false).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Completion {
    pub id: String,
    pub object: &'static str,
    pub created: i64,
    pub model: String,
    pub choices: Vec<CompletionChoice>,
    pub usage: Usage,
}

impl Completion {
    /// Folds the chunks of one stream into the completion a non-streaming client gets.
    pub fn from_chunks(chunks: &[Chunk]) -> Option<Completion> {
        let first = chunks.first()?;
        let mut content = String::new();
        let mut reasoning = String::new();
        let mut finish_reason = None;
        let mut usage = Usage::default();
        for chunk in chunks {
            for choice in &chunk.choices {
                content.push_str(choice.delta.content.as_deref().unwrap_or(""));
                reasoning.push_str(choice.delta.reasoning_content.as_deref().unwrap_or(""));
                finish_reason = choice.finish_reason.or(finish_reason);
            }
            if let Some(u) = chunk.usage {
                usage = u;
            }
        }
        Some(Completion {
            id: first.id.clone(),
            object: "chat.completion",
            created: first.created,
            model: first.model.clone(),
            choices: vec![CompletionChoice {
                index: 0,
                message: AssistantMessage {
                    role: "assistant",
                    content,
                    reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
                },
                finish_reason,
            }],
            usage,
        })
    }
}

/// One entry of `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelEntry {
    pub id: String,
    pub object: &'static str,
    pub created: i64,
    pub owned_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<ModelEntry>,
}

/// The OpenAI error body: `{"error": {"message", "type", "code", "param"}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenAiShape;

impl ErrorShape for OpenAiShape {
    const INVALID: &'static str = "invalid_params";
    const UNAUTHORIZED: &'static str = "invalid_api_key";

    fn body(error: &ApiError) -> serde_json::Value {
        serde_json::json!({
            "error": {"message": error.message, "type": error_kind(error), "code": error.code, "param": null}
        })
    }
}

/// An error in the OpenAI shape.
pub type ApiError = superpi_http::ApiError<OpenAiShape>;

/// The error code of a turn whose answer its output schema refused twice.
pub const OUTPUT_SCHEMA_MISMATCH: &str = "output_schema_mismatch";

/// OpenAI's `type` of an error: a `model_error` for an answer the output schema refused (OpenAI's
/// type for a model's invalid content), else as [`error_type`].
fn error_kind(error: &ApiError) -> &'static str {
    match error.code {
        OUTPUT_SCHEMA_MISMATCH => "model_error",
        _ => error_type(error.status),
    }
}

/// OpenAI's `type`: request errors for 4xx, server errors otherwise.
pub fn error_type(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "authentication_error",
        s if s.is_client_error() => "invalid_request_error",
        _ => "server_error",
    }
}

pub fn model_not_found(model: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "model_not_found",
        format!(
            "The model `{model}` does not exist: use a harness id or a configured provider's model (GET /v1/models)"
        ),
    )
}

pub fn provider_not_configured(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "provider_not_configured", message)
}

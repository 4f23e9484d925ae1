//! The stream algebra shared by every provider.

use std::pin::Pin;

use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use superpi_proto::{Message, Usage};

/// A tool the model may call, in a vendor-neutral shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub input_schema: Value,
    /// Loaded on demand by the vendor's built-in tool search (sent with its `defer_loading`
    /// flag beside its search tool); only for a provider whose [`crate::Provider::tool_search`]
    /// says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
}

/// The JSON Schema a final answer must meet, for a provider with a structured-output mode
/// ([`crate::Provider::structured_output`]): OpenAI's `response_format` / `text.format`.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSchema {
    /// `^[a-zA-Z0-9_-]{1,64}$`, as OpenAI takes it.
    pub name: String,
    /// An object schema.
    pub schema: Value,
}

/// One model call: the system prompt, the conversation so far, and the tools on offer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRequest {
    pub model: String,
    pub system: Option<String>,
    /// user, assistant (with tool_call blocks) and tool (with tool_result blocks) messages.
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: Option<u32>,
    /// The conversation's thinking effort (see [`crate::effort`]); `None`: the settings' defaults.
    pub effort: Option<superpi_proto::Effort>,
    /// The schema the answer must meet, sent in the vendor's structured-output mode.
    pub output_schema: Option<OutputSchema>,
}

/// Why a message ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model stopped to have tools run.
    ToolUse,
    /// The output token limit was reached.
    MaxTokens,
    /// The model refused.
    Refusal,
    /// The vendor paused a long turn of its own server tools (Anthropic's `pause_turn`): the
    /// caller sends the history back with this answer last, and no message after it, for the
    /// model to go on.
    Paused,
    /// The stream failed.
    Error,
    /// The caller cancelled.
    Aborted,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Refusal => "refusal",
            StopReason::Paused => "pause_turn",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
        }
    }
}

/// A structured provider failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProviderError {
    /// The model name routes to no provider.
    #[error("unknown model `{model}`: {hint}")]
    UnknownModel { model: String, hint: String },
    /// The model is known but superpi cannot serve it (an OpenAI model of the Responses API only).
    #[error("model `{model}` is not supported: {reason}")]
    Unsupported { model: String, reason: String },
    /// The provider has no credentials (names the variable or setting that is missing).
    #[error("provider {provider} is not configured: {missing}")]
    NotConfigured { provider: String, missing: String },
    /// The API answered with an HTTP error.
    #[error("{provider} answered HTTP {status}: {message}")]
    Http { provider: String, status: u16, message: String },
    /// The API refused the request as longer than the model's context window (read from the
    /// vendor's or local server's words by [`crate::overflow`]): the caller may make the
    /// context smaller and send it again. `window` and `requested` (tokens) when it says them.
    #[error("{provider} answered HTTP {status}: {message}")]
    ContextOverflow { provider: String, status: u16, message: String, window: Option<u64>, requested: Option<u64> },
    /// The connection failed or was cut.
    #[error("{provider} transport error: {message}")]
    Transport { provider: String, message: String },
    /// The API sent something that does not parse.
    #[error("{provider} sent a malformed stream: {message}")]
    Protocol { provider: String, message: String },
    /// The model itself failed the turn (the mock's `@fail`).
    #[error("{message}")]
    Model { message: String },
}

/// What a vendor reports beyond [`Usage`] (whose `cached_input_tokens` carries the cache's
/// share to the person): a part of its counts, not an addition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UsageDetails {
    /// Output tokens spent reasoning (of `output_tokens`).
    pub reasoning_tokens: u64,
}

/// The terminal payload: the assembled message and why it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Terminal {
    pub stop_reason: StopReason,
    /// Every content block closed so far, with usage and stop reason.
    pub message: Message,
    pub usage: Usage,
    /// The reasoning share of `usage`, where the vendor reports it.
    pub details: UsageDetails,
    pub response_id: Option<String>,
    /// Always `None` on `Done`, always `Some` on `Error`.
    pub error: Option<ProviderError>,
}

/// One observable step of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Always first.
    Start {
        response_id: Option<String>,
    },
    TextStart {
        index: u32,
    },
    TextDelta {
        index: u32,
        delta: String,
    },
    /// `content` is the concatenation of the block's deltas.
    TextEnd {
        index: u32,
        content: String,
    },
    ThinkingStart {
        index: u32,
    },
    ThinkingDelta {
        index: u32,
        delta: String,
    },
    ThinkingEnd {
        index: u32,
        thinking: String,
        signature: Option<String>,
        redacted: bool,
    },
    /// `id` and `name` are known here when the API gives them up front.
    ToolCallStart {
        index: u32,
        id: Option<String>,
        name: Option<String>,
    },
    /// A chunk of the arguments JSON; `id`/`name` when they arrive late.
    ToolCallDelta {
        index: u32,
        delta: String,
        id: Option<String>,
        name: Option<String>,
    },
    ToolCallEnd {
        index: u32,
        id: String,
        name: String,
        arguments: Value,
    },
    /// The provider is retrying after a retryable failure (429, 529, 503): everything streamed
    /// since `Start` is void; a new attempt follows after `retry_in_ms`.
    Reset {
        retry_in_ms: u64,
    },
    /// A block the vendor's servers produced whole (its built-in tool search's call or
    /// result): kept in the message to be sent back, shown to nobody.
    Hosted {
        index: u32,
        provider: String,
        block: Value,
    },
    /// Successful terminal.
    Done(Terminal),
    /// Failed terminal.
    Error(Terminal),
}

impl StreamEvent {
    pub fn is_terminal(&self) -> bool {
        matches!(self, StreamEvent::Done(_) | StreamEvent::Error(_))
    }
}

/// What a provider returns: dropping it cancels the request.
pub type EventStream = Pin<Box<dyn Stream<Item = StreamEvent> + Send>>;

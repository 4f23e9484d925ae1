//! The messages of the kernel protocol, one enum per direction, tagged by `type`.
//!
//! A connection starts with `hello` both ways. Then the frontend sends `request`s (answered
//! by `response`s with the same id) and `ack`s (credit for a subscription); the kernel sends
//! `response`s, `event` frames (a batch of events of one subscription) and `lagged` notices.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Event;

/// Frontend to kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClientMessage {
    Hello(ClientHello),
    Request(Request),
    Ack(Ack),
}

/// Kernel to frontend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum KernelMessage {
    Hello(KernelHello),
    Response(Response),
    Event(EventBatch),
    Lagged(Lagged),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientHello {
    pub protocol: u32,
    /// The frontend's name: `cli`, `acp`, `mcp`, `rpc`, `gateway`, `agui`, ...
    pub frontend: String,
    pub version: String,
    /// Who the frontend acts for. The kernel scopes conversations by principal.
    #[serde(default = "local_principal")]
    pub principal: String,
    /// True for callers other than the local CLI: they get the remote mode ceiling.
    #[serde(default)]
    pub remote: bool,
    /// The frontend's provider variables, as digests: a kernel started without one of them,
    /// or with another value, is replaced or refuses with the reason. Absent: no check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_env: Option<ProviderEnv>,
}

/// The environment variables that configure the model providers: what a kernel reads at start
/// and a frontend compares in `hello`.
pub const PROVIDER_VARIABLES: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GEMINI_BASE_URL",
    "SUPERPI_OPENAI_AUTH_COMMAND",
    "SUPERPI_MODEL",
];

/// Whether `hello` carries a digest of the variable: one of [`PROVIDER_VARIABLES`], or a name
/// ending in `_KEY` or `_TOKEN` (where the providers file's custom models may read their keys
/// with `api_key_env`, e.g. `OPENROUTER_API_KEY`). The kernel compares only what it reads.
pub fn is_provider_variable(name: &str) -> bool {
    PROVIDER_VARIABLES.contains(&name) || name.ends_with("_KEY") || name.ends_with("_TOKEN")
}

/// A frontend's provider variables ([`is_provider_variable`]), never their values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderEnv {
    /// Name to digest (a truncated SHA-256 of the value) of each variable that is set and not
    /// blank.
    pub digests: std::collections::BTreeMap<String, String>,
    /// The frontend starts a kernel when none runs: an autostarted kernel with no running turn
    /// stops for it (error `KERNEL_REPLACED`) instead of refusing.
    #[serde(default)]
    pub autostart: bool,
}

/// The principal of a connection without a token: the kernel's own user.
pub const LOCAL_PRINCIPAL: &str = "local";

fn local_principal() -> String {
    LOCAL_PRINCIPAL.to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelHello {
    pub protocol: u32,
    pub version: String,
    pub pid: u32,
    /// Optional features this kernel offers, by name.
    #[serde(default)]
    pub capabilities: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    pub method: String,
    #[serde(default)]
    pub params: Value,
}

/// The answer to a request: exactly one of `result` and `error`. `id` is null only for an
/// error about a frame the kernel could not read as a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl Response {
    pub fn ok(id: u64, result: Value) -> Self {
        Response { id: Some(id), result: Some(result), error: None }
    }
    pub fn err(id: Option<u64>, error: ErrorObject) -> Self {
        Response { id, result: None, error: Some(error) }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct ErrorObject {
    pub code: i32,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }
}

/// Error codes of the kernel protocol (JSON-RPC's where they mean the same).
pub mod codes {
    /// A frame that is not JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// JSON that is not a message of this protocol (or `hello` missing or repeated).
    pub const INVALID_REQUEST: i32 = -32600;
    pub const METHOD_NOT_FOUND: i32 = -32601;
    pub const INVALID_PARAMS: i32 = -32602;
    pub const INTERNAL_ERROR: i32 = -32603;
    /// Not authenticated.
    pub const UNAUTHORIZED: i32 = -32001;
    /// The request was refused by policy (a mode above the ceiling, a harness rule).
    pub const FORBIDDEN: i32 = -32003;
    /// No such conversation, request or subscription (or one the principal does not own).
    pub const NOT_FOUND: i32 = -32004;
    /// A frame over the maximum size.
    pub const FRAME_TOO_LARGE: i32 = -32005;
    /// The protocol version of `hello` is not one the kernel speaks.
    pub const UNSUPPORTED_VERSION: i32 = -32006;
    /// A model or provider that is unknown or not configured.
    pub const PROVIDER: i32 = -32010;
    /// This autostarted kernel lacks (or differs in) a provider variable the frontend has: it
    /// stops, and the frontend starts one with its own environment.
    pub const KERNEL_REPLACED: i32 = -32011;
    /// The kernel lacks (or differs in) a provider variable the frontend has and is not
    /// replaced (started by hand, or turns running): the message says what to do.
    pub const PROVIDER_ENV: i32 = -32012;
    /// Another kernel on the same database runs the conversation, and this request is not
    /// passed on to it (MCP servers to attach, which would run on its machine): send it through
    /// that kernel, or again once the conversation is idle there.
    pub const RUN_ELSEWHERE: i32 = -32013;
    /// Too many requests of one kind in a short time (a webhook trigger's deliveries): try
    /// again later (HTTP frontends answer 429).
    pub const RATE_LIMITED: i32 = -32014;
}

/// Credit for a subscription: the frontend has processed `count` more events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ack {
    pub subscription: u64,
    pub count: u64,
}

/// A batch of events of one subscription, in `seq` order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventBatch {
    pub subscription: u64,
    pub events: Vec<Event>,
}

/// The subscription fell behind its bound: events after `resume_from_seq` were not sent.
/// The frontend watches again from that seq to catch up from the store (deltas are not
/// stored; the completed messages are).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lagged {
    pub subscription: u64,
    pub resume_from_seq: u64,
}

/// Encodes an event frame from events already serialized to JSON, so the kernel serializes
/// each event once however many frontends watch it.
pub fn encode_event_batch<'a>(subscription: u64, events: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"type\":\"event\",\"subscription\":");
    out.extend_from_slice(subscription.to_string().as_bytes());
    out.extend_from_slice(b",\"events\":");
    push_json_array(&mut out, events);
    out.push(b'}');
    out
}

/// Appends a JSON array of values already serialized (`[a,b]`), as they are: how event
/// batches are written by the kernel and passed on by frontends without parsing them again.
pub fn push_json_array<'a>(out: &mut Vec<u8>, items: impl IntoIterator<Item = &'a str>) {
    out.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.as_bytes());
    }
    out.push(b']');
}

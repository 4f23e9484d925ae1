//! What a backend's translator makes of its program's output: the kernel's vocabulary for a
//! turn that another agent runs (the seeds' normalized CLI events, narrowed to what superpi
//! shows), before the kernel stamps and publishes it.

use serde_json::Value;
use superpi_proto::{ContentBlock, PlanEntry, Usage};

/// One fact about the backend's turn, in the order the program reported it.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendEvent {
    /// The backend's own session id: stored, so the next turn (also after a kernel restart)
    /// continues that session.
    Session { id: String },
    /// Streamed answer text of the message being written.
    TextDelta { index: u32, delta: String },
    /// Streamed reasoning of the message being written.
    ThinkingDelta { index: u32, delta: String },
    /// A complete assistant message as the backend recorded it (authoritative over the
    /// deltas before it); tool calls in it are calls the backend is about to run.
    Message { content: Vec<ContentBlock> },
    /// The result of a tool call the backend ran.
    ToolResult { tool_call_id: String, output: String, is_error: bool },
    /// The backend asks whether a tool call may run; it waits for [`Approval`].
    ApprovalRequest(ApprovalRequest),
    /// The backend retries its model request (an overloaded or failing API).
    Retrying { attempt: u32, delay_ms: u64, reason: String },
    /// Something a person should know that is not part of the answer.
    Notice { level: &'static str, message: String },
    /// The backend's plan (its todo list) as it stands now, whole.
    Plan { entries: Vec<PlanEntry> },
    /// The turn ended as the backend says; `usage` is the whole turn's, `cost_usd` what the
    /// program says the turn cost (Claude Code's `total_cost_usd`, OpenCode's messages'
    /// `cost`; none where it says nothing, and the kernel prices the usage itself).
    End { result: String, stop_reason: String, usage: Usage, cost_usd: Option<f64> },
    /// The turn failed (the backend's own error, not a crash of the program).
    Failed { message: String },
    /// A request of the program that superpi does not answer otherwise: the driver refuses it
    /// at once so the program never waits.
    Unsupported { request_id: String, what: String },
    /// A line the protocol says to send the program now (the next step of a handshake); the
    /// driver writes it, the kernel never sees it.
    Write { line: String },
}

/// A tool call waiting for a person.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The backend's id for the request (answered with it).
    pub id: String,
    pub tool_name: String,
    pub input: Value,
    /// The tool call it is about, when the backend says.
    pub tool_call_id: Option<String>,
    /// The backend's words for why it asks.
    pub reason: Option<String>,
}

/// The answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum Approval {
    Allow,
    Deny { message: String },
}

/// An image of a prompt, by its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp` (read from the bytes).
    pub media_type: String,
    /// Standard base64.
    pub data: String,
}

/// A plan entry of a backend's todo list: `id` (its position when the backend gives none),
/// its text, and whether it is done (`completed`, or `cancelled`: nothing left to do).
pub(crate) fn plan_entry(at: usize, id: Option<&str>, text: &str, status: &str) -> PlanEntry {
    PlanEntry {
        id: id.filter(|id| !id.is_empty()).map_or_else(|| (at + 1).to_string(), str::to_string),
        text: text.to_string(),
        completed: matches!(status, "completed" | "cancelled"),
    }
}

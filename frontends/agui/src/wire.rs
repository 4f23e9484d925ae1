//! AG-UI wire types: the events this frontend sends, the messages of a snapshot, and the
//! bodies it reads. Checked against the zod schemas of `@ag-ui/core` 1.0: event `type`s in
//! SCREAMING_SNAKE_CASE, fields in camelCase, optional fields omitted rather than null.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One AG-UI event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AguiEvent {
    #[serde(rename_all = "camelCase")]
    RunStarted {
        thread_id: String,
        run_id: String,
    },
    #[serde(rename_all = "camelCase")]
    RunFinished {
        thread_id: String,
        run_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        outcome: Outcome,
    },
    #[serde(rename_all = "camelCase")]
    RunError {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageStart {
        message_id: String,
        role: String,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageContent {
        message_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    TextMessageEnd {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningStart {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageStart {
        message_id: String,
        role: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageContent {
        message_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningMessageEnd {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ReasoningEnd {
        message_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallStart {
        tool_call_id: String,
        tool_call_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallArgs {
        tool_call_id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallEnd {
        tool_call_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallResult {
        message_id: String,
        tool_call_id: String,
        content: String,
        role: String,
    },
    StateSnapshot {
        snapshot: Value,
    },
    /// An RFC 6902 JSON Patch against the last state sent.
    StateDelta {
        delta: json_patch::Patch,
    },
    MessagesSnapshot {
        messages: Vec<AguiMessage>,
    },
    Custom {
        name: String,
        value: Value,
    },
}

impl AguiEvent {
    /// The wire `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            AguiEvent::RunStarted { .. } => "RUN_STARTED",
            AguiEvent::RunFinished { .. } => "RUN_FINISHED",
            AguiEvent::RunError { .. } => "RUN_ERROR",
            AguiEvent::TextMessageStart { .. } => "TEXT_MESSAGE_START",
            AguiEvent::TextMessageContent { .. } => "TEXT_MESSAGE_CONTENT",
            AguiEvent::TextMessageEnd { .. } => "TEXT_MESSAGE_END",
            AguiEvent::ReasoningStart { .. } => "REASONING_START",
            AguiEvent::ReasoningMessageStart { .. } => "REASONING_MESSAGE_START",
            AguiEvent::ReasoningMessageContent { .. } => "REASONING_MESSAGE_CONTENT",
            AguiEvent::ReasoningMessageEnd { .. } => "REASONING_MESSAGE_END",
            AguiEvent::ReasoningEnd { .. } => "REASONING_END",
            AguiEvent::ToolCallStart { .. } => "TOOL_CALL_START",
            AguiEvent::ToolCallArgs { .. } => "TOOL_CALL_ARGS",
            AguiEvent::ToolCallEnd { .. } => "TOOL_CALL_END",
            AguiEvent::ToolCallResult { .. } => "TOOL_CALL_RESULT",
            AguiEvent::StateSnapshot { .. } => "STATE_SNAPSHOT",
            AguiEvent::StateDelta { .. } => "STATE_DELTA",
            AguiEvent::MessagesSnapshot { .. } => "MESSAGES_SNAPSHOT",
            AguiEvent::Custom { .. } => "CUSTOM",
        }
    }

    /// The event as JSON text (one SSE `data:` line).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A `MESSAGES_SNAPSHOT`'s JSON text around its messages: the text before the first
    /// message and after the last, between which the messages go joined by `,`. The
    /// transport writes a big snapshot this way, message by message.
    pub fn messages_snapshot_frame() -> (String, String) {
        let empty = AguiEvent::MessagesSnapshot { messages: Vec::new() }.to_json();
        match empty.rsplit_once("[]") {
            Some((before, after)) => (format!("{before}["), format!("]{after}")),
            None => (empty, String::new()),
        }
    }

    /// Whether this event ends a run.
    pub fn ends_run(&self) -> bool {
        matches!(self, AguiEvent::RunFinished { .. } | AguiEvent::RunError { .. })
    }
}

/// Why a run ended (`RUN_FINISHED.outcome`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Cancelled,
}

/// A message of a `MESSAGES_SNAPSHOT`, tagged by `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum AguiMessage {
    User {
        id: String,
        content: String,
    },
    #[serde(rename_all = "camelCase")]
    Assistant {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallRef>,
    },
    #[serde(rename_all = "camelCase")]
    Tool {
        id: String,
        content: String,
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    System {
        id: String,
        content: String,
    },
    Reasoning {
        id: String,
        content: String,
    },
}

/// A call carried by an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRef {
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionCall,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

impl ToolCallRef {
    pub fn new(id: &str, name: &str, arguments: &Value) -> Self {
        ToolCallRef {
            id: id.to_string(),
            kind: "function".to_string(),
            function: FunctionCall { name: name.to_string(), arguments: json_text(arguments) },
        }
    }
}

/// A JSON value as text: strings as they are, anything else serialised.
pub fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// The body of `POST /agui/v1/run`: AG-UI's `RunAgentInput`. Messages are read loosely (the
/// content of a user message may be a string or an array of parts).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    pub thread_id: String,
    pub run_id: String,
    pub messages: Vec<Value>,
    #[serde(default)]
    pub tools: Vec<Value>,
    #[serde(default)]
    pub context: Vec<ContextItem>,
    #[serde(default)]
    pub state: Option<Value>,
    #[serde(default)]
    pub forwarded_props: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ContextItem {
    pub description: String,
    pub value: String,
}

/// The body of `POST /agui/v1/sessions/{id}/input`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum InputRequest {
    /// A new user message: queued behind a running turn, or with `steer` added to it before
    /// its next model request.
    Prompt {
        prompt: String,
        #[serde(default)]
        steer: bool,
    },
    /// The answer to a `superpi.permission_request`.
    Permission { request_id: String, option_id: String },
    /// The answer to a `superpi.ui_request`: the chosen option id.
    Answer {
        request_id: String,
        #[serde(alias = "optionId")]
        answer: String,
    },
    /// Stops the running turn.
    Cancel {},
}

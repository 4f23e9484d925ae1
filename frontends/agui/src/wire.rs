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
    /// A tool call's progress as an activity message (its output as it comes).
    #[serde(rename_all = "camelCase")]
    ActivitySnapshot {
        message_id: String,
        activity_type: String,
        content: Value,
    },
    /// An RFC 6902 JSON Patch against an activity's content.
    #[serde(rename_all = "camelCase")]
    ActivityDelta {
        message_id: String,
        activity_type: String,
        patch: json_patch::Patch,
    },
    #[serde(rename_all = "camelCase")]
    SubagentStarted {
        subagent_run_id: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    SubagentFinished {
        subagent_run_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
    },
    #[serde(rename_all = "camelCase")]
    SubagentError {
        subagent_run_id: String,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
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
            AguiEvent::ActivitySnapshot { .. } => "ACTIVITY_SNAPSHOT",
            AguiEvent::ActivityDelta { .. } => "ACTIVITY_DELTA",
            AguiEvent::SubagentStarted { .. } => "SUBAGENT_STARTED",
            AguiEvent::SubagentFinished { .. } => "SUBAGENT_FINISHED",
            AguiEvent::SubagentError { .. } => "SUBAGENT_ERROR",
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Outcome {
    /// Done; `pending_tool_call_ids` names the client tools the turn waits for.
    Success {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pending_tool_call_ids: Vec<String>,
    },
    /// Paused on questions; the next run's `resume` answers them.
    Interrupt {
        interrupts: Vec<Interrupt>,
    },
    Cancelled,
}

impl Outcome {
    /// A run that completed with nothing pending.
    pub fn success() -> Self {
        Outcome::Success { pending_tool_call_ids: Vec::new() }
    }
}

/// Something a run needs answered before it can go on (a permission question).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    pub id: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The JSON schema of the `payload` a resume entry answers with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
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
    pub tools: Vec<ClientTool>,
    #[serde(default)]
    pub context: Vec<ContextItem>,
    #[serde(default)]
    pub state: Option<Value>,
    #[serde(default)]
    pub forwarded_props: Option<Value>,
    /// Present from clients of AG-UI 1.0 on: they read questions as interrupts.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// Answers to the interrupts the previous run ended with.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
}

impl RunAgentInput {
    /// Why the client's tools cannot be offered: a blank or repeated name.
    pub fn client_tools_invalid(&self) -> Option<String> {
        for (at, tool) in self.tools.iter().enumerate() {
            if tool.name.trim().is_empty() {
                return Some("tools: a tool needs a name".into());
            }
            if self.tools[..at].iter().any(|t| t.name == tool.name) {
                return Some(format!("tools: `{}` is named twice", tool.name));
            }
        }
        None
    }
}

/// A tool the client offers and runs itself (`RunAgentInput.tools`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ClientTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Its arguments' JSON schema.
    #[serde(default)]
    pub parameters: Option<Value>,
}

/// An answer to one interrupt.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub status: String,
    #[serde(default)]
    pub payload: Option<Value>,
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

/// The AG-UI version this frontend serves.
pub const PROTOCOL_VERSION: &str = "1.0";

/// What `getCapabilities` answers: AG-UI's `AgentCapabilities`, the same for every thread
/// (a harness may offer fewer tools than `tools` says; the run's events are the truth).
pub fn capabilities() -> Value {
    serde_json::json!({
        "identity": {
            "name": "superpi",
            "type": "superpi",
            "description": "A durable agent: the conversation, its tools and its permissions live in the superpi kernel.",
            "version": env!("CARGO_PKG_VERSION"),
            "metadata": {"protocolVersion": PROTOCOL_VERSION},
        },
        "transport": {"streaming": true, "websocket": false, "httpBinary": false, "pushNotifications": false, "resumable": false},
        "tools": {"supported": true, "parallelCalls": false, "clientProvided": true},
        "state": {"snapshots": true, "deltas": true, "memory": true, "persistentState": true},
        "multiAgent": {"supported": true, "delegation": true, "handoffs": false},
        "reasoning": {"supported": true, "streaming": true, "encrypted": false},
        "multimodal": {
            "input": {"image": true, "audio": false, "video": false, "pdf": false, "file": false},
            "output": {"image": false, "audio": false},
        },
        "execution": {"codeExecution": true, "sandboxed": true, "maxIterations": 64},
        "humanInTheLoop": {
            "supported": true,
            "approvals": true,
            "interventions": true,
            "feedback": false,
            "interrupts": true,
            "approveWithEdits": false,
        },
    })
}

//! The typed turn event: one struct, one builder per type, one flat wire form.
//!
//! Wire form: the payload keys sit at the top level beside the envelope keys `v`, `type`,
//! `conversation_id`, `turn_id`, `seq` and `timestamp_ms`. A reader accepts maps from older
//! producers (no `v`, no `turn_id`) and keeps an event of a type it does not know as
//! [`EventBody::Unknown`] rather than failing.
//!
//! Over 500 lines on purpose: every event type's body and its builder sit beside the one struct
//! and wire form they make, so an event type is added in one file.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::{ContentBlock, Cost, Role, Usage};

/// One event of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub v: u32,
    pub conversation_id: i64,
    pub turn_id: Option<i64>,
    /// Position in the conversation's event sequence; stamped by the kernel on publish.
    pub seq: u64,
    pub timestamp_ms: i64,
    #[serde(flatten)]
    pub body: EventBody,
}

/// [`Event`] reads its map in one pass: the envelope keys straight into their fields, the rest
/// kept as the body's map, which is then read as the body. A key given twice counts once, the
/// last, as when the event is written back: otherwise a known type with a duplicate key read as
/// `Unknown` and wrote back as the known type (found by fuzzing). Why by hand: a derived
/// `flatten` buffers the whole map a second time, and reading into a `Map` first hashes every
/// key or copies an envelope key; every frontend reads every event frame through here
/// (`event_parse_bench`: 1.1-1.2 M events/s before, 1.6-1.9 M now).
impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Event, D::Error> {
        deserializer.deserialize_map(EventVisitor)
    }
}

/// A key of an event's wire map: an envelope key is matched without being copied.
enum EventKey {
    V,
    ConversationId,
    TurnId,
    Seq,
    TimestampMs,
    Body(String),
}

impl<'de> Deserialize<'de> for EventKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<EventKey, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = EventKey;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }

            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<EventKey, E> {
                Ok(match key {
                    "v" => EventKey::V,
                    "conversation_id" => EventKey::ConversationId,
                    "turn_id" => EventKey::TurnId,
                    "seq" => EventKey::Seq,
                    "timestamp_ms" => EventKey::TimestampMs,
                    other => EventKey::Body(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct EventVisitor;

impl<'de> serde::de::Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        use serde::de::Error as _;
        let (mut v, mut conversation_id, mut turn_id, mut seq, mut timestamp_ms) = (None, None, None, None, None);
        let mut body: Vec<(String, Value)> = Vec::with_capacity(4);
        while let Some(key) = map.next_key::<EventKey>()? {
            match key {
                EventKey::V => v = Some(map.next_value::<u32>()?),
                EventKey::ConversationId => conversation_id = Some(map.next_value::<i64>()?),
                EventKey::TurnId => turn_id = Some(map.next_value::<Option<i64>>()?),
                EventKey::Seq => seq = Some(map.next_value::<u64>()?),
                EventKey::TimestampMs => timestamp_ms = Some(map.next_value::<i64>()?),
                EventKey::Body(key) => {
                    let value = map.next_value::<Value>()?;
                    match body.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = value,
                        None => body.push((key, value)),
                    }
                }
            }
        }
        let conversation_id = conversation_id.ok_or_else(|| A::Error::missing_field("conversation_id"))?;
        let fields = serde::de::value::MapDeserializer::<_, serde_json::Error>::new(body.into_iter());
        let body = EventBody::deserialize(fields).map_err(A::Error::custom)?;
        Ok(Event {
            v: v.unwrap_or(crate::EVENT_SCHEMA_VERSION),
            conversation_id,
            turn_id: turn_id.flatten(),
            seq: seq.unwrap_or_default(),
            timestamp_ms: timestamp_ms.unwrap_or_default(),
            body,
        })
    }
}

/// A permission option offered to a person; `kind` is ACP's PermissionOptionKind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    pub kind: String,
}

/// One item of an agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub completed: bool,
}

/// The payload of an event, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventBody {
    TurnStarted {},
    TurnCompleted {
        stop_reason: String,
        #[serde(default)]
        result: Option<String>,
    },
    TurnError {
        error: String,
    },
    TurnCancelled {},
    TextDelta {
        index: u32,
        delta: String,
    },
    ThinkingDelta {
        index: u32,
        delta: String,
    },
    ToolcallDelta {
        index: u32,
        #[serde(default)]
        delta: Option<String>,
        #[serde(default)]
        partial_args: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    MessageCompleted {
        role: Role,
        content: Vec<ContentBlock>,
        #[serde(default)]
        usage: Option<Usage>,
    },
    StreamReset {
        retry_in_ms: u64,
    },
    ToolStarted {
        tool_call_id: String,
        name: String,
        arguments: Value,
        #[serde(default)]
        overwritten_keys: Vec<String>,
    },
    /// Output of a long-running tool as it comes (throttled).
    ToolOutput {
        tool_call_id: String,
        name: String,
        chunk: String,
    },
    ToolBlocked {
        tool_call_id: String,
        name: String,
        reason: String,
    },
    ToolCompleted {
        tool_call_id: String,
        name: String,
        is_error: bool,
        /// What the model reads (usually a string).
        output: Value,
        /// Structured output for programs (MCP structuredContent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<Value>,
        /// Details for a user interface (a unified diff, a spill path, an exit code).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    PermissionRequest {
        request_id: String,
        tool_call_id: String,
        tool_name: String,
        arguments: Value,
        reason: String,
        #[serde(default)]
        risk: Option<String>,
        options: Vec<PermissionOption>,
    },
    UiRequest {
        request_id: String,
        #[serde(flatten)]
        request: Map<String, Value>,
    },
    UiResolved {
        request_id: String,
        outcome: Value,
    },
    StateChanged {
        status: String,
    },
    ModeChanged {
        mode: String,
        #[serde(default)]
        max_mode: Option<String>,
    },
    UsageUpdated {
        input_tokens: u64,
        output_tokens: u64,
        total_input_tokens: u64,
        total_output_tokens: u64,
        /// Of `input_tokens`, those read from the vendor's prompt cache.
        #[serde(default)]
        cached_input_tokens: u64,
        /// Of `total_input_tokens`, those read from the cache.
        #[serde(default)]
        total_cached_input_tokens: u64,
        /// Tokens the conversation's context holds now (what the next request starts from).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_tokens: Option<u64>,
        /// The model's context window.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
        /// What the last model call cost in US dollars, by the model's price (none when the
        /// model has no price; an agent backend's turn as the program reported it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// What the turn has cost so far.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_cost_usd: Option<f64>,
        /// What the conversation has cost so far (every priced call it made).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total_cost_usd: Option<f64>,
    },
    PlanUpdated {
        entries: Vec<PlanEntry>,
    },
    CompactionCompleted {
        head_entry_id: Value,
        #[serde(default)]
        summary: Option<String>,
    },
    /// `session.clear`: the model's context starts afresh here (the history keeps everything).
    ContextCleared {},
    Notice {
        level: String,
        message: String,
    },
    SubagentStarted {
        child_conversation_id: i64,
        role: String,
        task: String,
    },
    SubagentFinished {
        child_conversation_id: i64,
        status: String,
        #[serde(default)]
        summary: Option<String>,
    },
    /// The model handed the conversation from one harness to another (its `handoff` tool): the
    /// next steps run with `to`'s prompt, tools and model.
    Handoff {
        from: String,
        to: String,
        #[serde(default)]
        summary: Option<String>,
    },
    /// The `artifact` tool wrote a file for the person (`artifact.read` gives its bytes).
    ArtifactCreated {
        tool_call_id: String,
        name: String,
        bytes: u64,
        media_type: String,
    },
    /// An event of a type this reader does not know (or whose payload it cannot read),
    /// kept whole: its map, `type` included, minus the envelope keys.
    #[serde(untagged)]
    Unknown(Map<String, Value>),
}

/// Every event type name this crate knows, in the order of the design's table.
pub const EVENT_TYPES: &[&str] = &[
    "turn_started",
    "turn_completed",
    "turn_error",
    "turn_cancelled",
    "text_delta",
    "thinking_delta",
    "toolcall_delta",
    "message_completed",
    "stream_reset",
    "tool_started",
    "tool_output",
    "tool_blocked",
    "tool_completed",
    "permission_request",
    "ui_request",
    "ui_resolved",
    "state_changed",
    "mode_changed",
    "usage_updated",
    "plan_updated",
    "compaction_completed",
    "context_cleared",
    "notice",
    "subagent_started",
    "subagent_finished",
    "handoff",
    "artifact_created",
];

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl EventBody {
    /// The wire `type` of this payload.
    pub fn type_name(&self) -> &str {
        match self {
            EventBody::TurnStarted {} => "turn_started",
            EventBody::TurnCompleted { .. } => "turn_completed",
            EventBody::TurnError { .. } => "turn_error",
            EventBody::TurnCancelled {} => "turn_cancelled",
            EventBody::TextDelta { .. } => "text_delta",
            EventBody::ThinkingDelta { .. } => "thinking_delta",
            EventBody::ToolcallDelta { .. } => "toolcall_delta",
            EventBody::MessageCompleted { .. } => "message_completed",
            EventBody::StreamReset { .. } => "stream_reset",
            EventBody::ToolStarted { .. } => "tool_started",
            EventBody::ToolOutput { .. } => "tool_output",
            EventBody::ToolBlocked { .. } => "tool_blocked",
            EventBody::ToolCompleted { .. } => "tool_completed",
            EventBody::PermissionRequest { .. } => "permission_request",
            EventBody::UiRequest { .. } => "ui_request",
            EventBody::UiResolved { .. } => "ui_resolved",
            EventBody::StateChanged { .. } => "state_changed",
            EventBody::ModeChanged { .. } => "mode_changed",
            EventBody::UsageUpdated { .. } => "usage_updated",
            EventBody::PlanUpdated { .. } => "plan_updated",
            EventBody::CompactionCompleted { .. } => "compaction_completed",
            EventBody::ContextCleared {} => "context_cleared",
            EventBody::Notice { .. } => "notice",
            EventBody::SubagentStarted { .. } => "subagent_started",
            EventBody::SubagentFinished { .. } => "subagent_finished",
            EventBody::Handoff { .. } => "handoff",
            EventBody::ArtifactCreated { .. } => "artifact_created",
            EventBody::Unknown(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// Streaming deltas are published live but never stored: the completed message is.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            EventBody::TextDelta { .. }
                | EventBody::ThinkingDelta { .. }
                | EventBody::ToolcallDelta { .. }
                | EventBody::ToolOutput { .. }
        )
    }

    /// Events that end a turn.
    pub fn is_turn_end(&self) -> bool {
        matches!(self, EventBody::TurnCompleted { .. } | EventBody::TurnError { .. } | EventBody::TurnCancelled {})
    }
}

/// Errors reading an event from its wire form.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("event is not a JSON object")]
    NotAnObject,
    #[error("event has no string `type`")]
    NoType,
    #[error("bad event envelope: {0}")]
    Envelope(#[from] serde_json::Error),
}

impl Event {
    /// An event with the envelope filled in but for `seq`, which the kernel stamps.
    pub fn new(conversation_id: i64, turn_id: Option<i64>, body: EventBody) -> Self {
        Event { v: crate::EVENT_SCHEMA_VERSION, conversation_id, turn_id, seq: 0, timestamp_ms: now_ms(), body }
    }

    pub fn type_name(&self) -> &str {
        self.body.type_name()
    }

    /// The flat wire map: payload keys at the top level beside the envelope keys.
    pub fn to_wire(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The wire form as JSON text, ready for a frame.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a wire map. An older map (no `v`, no `turn_id`) reads as version 1 with no
    /// turn; an unknown `type` becomes [`EventBody::Unknown`].
    pub fn from_wire(wire: Value) -> Result<Event, WireError> {
        let Value::Object(map) = &wire else {
            return Err(WireError::NotAnObject);
        };
        if !map.get("type").is_some_and(Value::is_string) {
            return Err(WireError::NoType);
        }
        Ok(serde_json::from_value(wire)?)
    }

    pub fn from_json(text: &str) -> Result<Event, WireError> {
        Self::from_wire(serde_json::from_str(text)?)
    }
}

/// The four permission options, with ACP's PermissionOptionKind in `kind`.
pub fn permission_options() -> Vec<PermissionOption> {
    [
        ("allow_once", "Allow once"),
        ("allow_always", "Allow always"),
        ("reject_once", "Reject once"),
        ("reject_always", "Reject always"),
    ]
    .into_iter()
    .map(|(id, name)| PermissionOption { option_id: id.into(), name: name.into(), kind: id.into() })
    .collect()
}

/// The options offered besides the four when the answer can be kept as a permission rule:
/// "always in this project" (only with a workspace) and "always for me". Their `kind` is
/// `allow_always`, so a client that knows only ACP's kinds shows them as such.
pub fn lasting_permission_options(project: bool) -> Vec<PermissionOption> {
    let project = project.then_some(("allow_always_project", "Always allow in this project"));
    project
        .into_iter()
        .chain([("allow_always_user", "Always allow for me, in every project")])
        .map(|(id, name)| PermissionOption { option_id: id.into(), name: name.into(), kind: "allow_always".into() })
        .collect()
}

/// Whether `id` is one of the permission options (the four, or a lasting one).
pub fn is_permission_option(id: &str) -> bool {
    permission_options().iter().chain(&lasting_permission_options(true)).any(|o| o.option_id == id)
}

/// The fields of a permission request, for [`Event::permission_request`].
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequestFields {
    pub request_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub arguments: Value,
    pub reason: String,
    pub risk: Option<String>,
}

// One builder per type: the only sanctioned construction sites.
impl Event {
    pub fn turn_started(conv: i64, turn: i64) -> Self {
        Self::new(conv, Some(turn), EventBody::TurnStarted {})
    }
    pub fn turn_completed(conv: i64, turn: i64, result: Option<String>, stop_reason: &str) -> Self {
        Self::new(conv, Some(turn), EventBody::TurnCompleted { stop_reason: stop_reason.into(), result })
    }
    pub fn turn_error(conv: i64, turn: i64, error: impl Into<String>) -> Self {
        Self::new(conv, Some(turn), EventBody::TurnError { error: error.into() })
    }
    pub fn turn_cancelled(conv: i64, turn: i64) -> Self {
        Self::new(conv, Some(turn), EventBody::TurnCancelled {})
    }
    pub fn text_delta(conv: i64, turn: Option<i64>, index: u32, delta: impl Into<String>) -> Self {
        Self::new(conv, turn, EventBody::TextDelta { index, delta: delta.into() })
    }
    pub fn thinking_delta(conv: i64, turn: Option<i64>, index: u32, delta: impl Into<String>) -> Self {
        Self::new(conv, turn, EventBody::ThinkingDelta { index, delta: delta.into() })
    }
    pub fn toolcall_delta(
        conv: i64,
        turn: Option<i64>,
        index: u32,
        delta: Option<String>,
        partial_args: Value,
        id: Option<String>,
        name: Option<String>,
    ) -> Self {
        Self::new(conv, turn, EventBody::ToolcallDelta { index, delta, partial_args, id, name })
    }
    pub fn message_completed(
        conv: i64,
        turn: Option<i64>,
        role: Role,
        content: Vec<ContentBlock>,
        usage: Option<Usage>,
    ) -> Self {
        Self::new(conv, turn, EventBody::MessageCompleted { role, content, usage })
    }
    pub fn stream_reset(conv: i64, turn: Option<i64>, retry_in_ms: u64) -> Self {
        Self::new(conv, turn, EventBody::StreamReset { retry_in_ms })
    }
    pub fn tool_started(
        conv: i64,
        turn: Option<i64>,
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
        overwritten_keys: Vec<String>,
    ) -> Self {
        Self::new(
            conv,
            turn,
            EventBody::ToolStarted {
                tool_call_id: tool_call_id.into(),
                name: name.into(),
                arguments,
                overwritten_keys,
            },
        )
    }
    pub fn tool_output(
        conv: i64,
        turn: Option<i64>,
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        chunk: impl Into<String>,
    ) -> Self {
        Self::new(
            conv,
            turn,
            EventBody::ToolOutput { tool_call_id: tool_call_id.into(), name: name.into(), chunk: chunk.into() },
        )
    }
    pub fn tool_blocked(
        conv: i64,
        turn: Option<i64>,
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::new(
            conv,
            turn,
            EventBody::ToolBlocked { tool_call_id: tool_call_id.into(), name: name.into(), reason: reason.into() },
        )
    }
    pub fn tool_completed(
        conv: i64,
        turn: Option<i64>,
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        is_error: bool,
        output: Value,
    ) -> Self {
        Self::new(
            conv,
            turn,
            EventBody::ToolCompleted {
                tool_call_id: tool_call_id.into(),
                name: name.into(),
                is_error,
                output,
                structured: None,
                details: None,
            },
        )
    }

    /// Adds the structured and UI channels to a `tool_completed` event (no-op for others).
    pub fn with_tool_channels(mut self, structured_out: Option<Value>, details_out: Option<Value>) -> Self {
        if let EventBody::ToolCompleted { structured, details, .. } = &mut self.body {
            *structured = structured_out;
            *details = details_out;
        }
        self
    }
    pub fn permission_request(conv: i64, turn: Option<i64>, fields: PermissionRequestFields) -> Self {
        Self::new(
            conv,
            turn,
            EventBody::PermissionRequest {
                request_id: fields.request_id,
                tool_call_id: fields.tool_call_id,
                tool_name: fields.tool_name,
                arguments: fields.arguments,
                reason: fields.reason,
                risk: fields.risk,
                options: permission_options(),
            },
        )
    }
    /// Adds options to a permission request (the lasting ones); any other event is unchanged.
    pub fn with_permission_options(mut self, more: Vec<PermissionOption>) -> Self {
        if let EventBody::PermissionRequest { options, .. } = &mut self.body {
            options.extend(more);
        }
        self
    }
    pub fn ui_request(
        conv: i64,
        turn: Option<i64>,
        request_id: impl Into<String>,
        request: Map<String, Value>,
    ) -> Self {
        Self::new(conv, turn, EventBody::UiRequest { request_id: request_id.into(), request })
    }
    pub fn ui_resolved(conv: i64, turn: Option<i64>, request_id: impl Into<String>, outcome: Value) -> Self {
        Self::new(conv, turn, EventBody::UiResolved { request_id: request_id.into(), outcome })
    }
    pub fn state_changed(conv: i64, turn: Option<i64>, status: impl Into<String>) -> Self {
        Self::new(conv, turn, EventBody::StateChanged { status: status.into() })
    }
    pub fn mode_changed(conv: i64, mode: impl Into<String>, max_mode: Option<String>) -> Self {
        Self::new(conv, None, EventBody::ModeChanged { mode: mode.into(), max_mode })
    }
    pub fn usage_updated(conv: i64, turn: Option<i64>, last: Usage, total: Usage) -> Self {
        Self::new(
            conv,
            turn,
            EventBody::UsageUpdated {
                input_tokens: last.input_tokens,
                output_tokens: last.output_tokens,
                total_input_tokens: total.input_tokens,
                total_output_tokens: total.output_tokens,
                cached_input_tokens: last.cached_input_tokens,
                total_cached_input_tokens: total.cached_input_tokens,
                context_tokens: None,
                context_window: None,
                cost_usd: None,
                turn_cost_usd: None,
                total_cost_usd: None,
            },
        )
    }

    /// Adds the costs to a `usage_updated` event (no-op for others).
    pub fn with_cost(mut self, cost: Cost) -> Self {
        if let EventBody::UsageUpdated { cost_usd, turn_cost_usd, total_cost_usd, .. } = &mut self.body {
            *cost_usd = cost.call;
            *turn_cost_usd = cost.turn;
            *total_cost_usd = cost.total;
        }
        self
    }

    /// Adds the context's size and the model's window to a `usage_updated` event (no-op for
    /// others).
    pub fn with_context(mut self, tokens: u64, window: u64) -> Self {
        if let EventBody::UsageUpdated { context_tokens, context_window, .. } = &mut self.body {
            *context_tokens = Some(tokens);
            *context_window = Some(window);
        }
        self
    }
    pub fn plan_updated(conv: i64, turn: Option<i64>, entries: Vec<PlanEntry>) -> Self {
        Self::new(conv, turn, EventBody::PlanUpdated { entries })
    }
    pub fn compaction_completed(conv: i64, turn: Option<i64>, head_entry_id: Value, summary: Option<String>) -> Self {
        Self::new(conv, turn, EventBody::CompactionCompleted { head_entry_id, summary })
    }
    pub fn context_cleared(conv: i64) -> Self {
        Self::new(conv, None, EventBody::ContextCleared {})
    }
    pub fn notice(conv: i64, turn: Option<i64>, level: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(conv, turn, EventBody::Notice { level: level.into(), message: message.into() })
    }
    pub fn subagent_started(
        conv: i64,
        turn: Option<i64>,
        child_conversation_id: i64,
        role: impl Into<String>,
        task: impl Into<String>,
    ) -> Self {
        Self::new(
            conv,
            turn,
            EventBody::SubagentStarted { child_conversation_id, role: role.into(), task: task.into() },
        )
    }
    pub fn subagent_finished(
        conv: i64,
        turn: Option<i64>,
        child_conversation_id: i64,
        status: impl Into<String>,
        summary: Option<String>,
    ) -> Self {
        Self::new(conv, turn, EventBody::SubagentFinished { child_conversation_id, status: status.into(), summary })
    }
    pub fn handoff(
        conv: i64,
        turn: Option<i64>,
        from: impl Into<String>,
        to: impl Into<String>,
        summary: Option<String>,
    ) -> Self {
        Self::new(conv, turn, EventBody::Handoff { from: from.into(), to: to.into(), summary })
    }
    pub fn artifact_created(
        conv: i64,
        turn: Option<i64>,
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        bytes: u64,
        media_type: impl Into<String>,
    ) -> Self {
        let (tool_call_id, name, media_type) = (tool_call_id.into(), name.into(), media_type.into());
        Self::new(conv, turn, EventBody::ArtifactCreated { tool_call_id, name, bytes, media_type })
    }
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;

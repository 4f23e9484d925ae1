//! The kernel's methods: names, typed params and typed results.
//!
//! A request carries `method` and `params`; [`Method::parse`] turns them into one typed
//! value, telling an unknown method from bad params so the kernel answers with the right code.
//!
//! Over 500 lines on purpose: every method's params and result sit beside the one enum that
//! parses them, so a method is added in one file.

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::artifact::{ArtifactListParams, ArtifactReadParams};
use crate::content::{ContentBlock, Entry};
use crate::effort::Effort;
use crate::event::Event;
use crate::memory::{MemoryAddParams, MemoryListParams, MemoryPinParams, MemoryRemoveParams};
use crate::message::{ErrorObject, codes};
use crate::schedule::{
    ScheduleAddParams, ScheduleListParams, ScheduleRemoveParams, ScheduleResumeParams, TriggerFireParams,
};

/// Every method the kernel serves, with its params.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Method {
    SessionOpen(OpenParams),
    SessionSubmit(SubmitParams),
    SessionWatch(WatchParams),
    SessionUnwatch(UnwatchParams),
    SessionCancel(ConversationRef),
    SessionList(ListParams),
    SessionHistory(HistoryParams),
    SessionFork(ForkParams),
    SessionSetMode(SetModeParams),
    SessionSetModel(SetModelParams),
    SessionSetEffort(SetEffortParams),
    SessionCompact(ConversationRef),
    SessionClear(ConversationRef),
    SessionDelete(ConversationRef),
    SessionUndo(UndoParams),
    CommandList(CommandListParams),
    HarnessList,
    ModelList,
    PermissionRespond(PermissionRespondParams),
    UiRespond(UiRespondParams),
    ToolList(ToolListParams),
    ToolCall(ToolCallParams),
    ToolCancel(ToolCancelParams),
    KernelStatus,
    KernelMetrics,
    KernelShutdown,
    ScheduleAdd(ScheduleAddParams),
    ScheduleList(ScheduleListParams),
    ScheduleRemove(ScheduleRemoveParams),
    ScheduleResume(ScheduleResumeParams),
    TriggerFire(TriggerFireParams),
    MemoryList(MemoryListParams),
    MemoryAdd(MemoryAddParams),
    MemoryPin(MemoryPinParams),
    MemoryRemove(MemoryRemoveParams),
    ArtifactList(ArtifactListParams),
    ArtifactRead(ArtifactReadParams),
}

/// The method names, as documented in PROTOCOL.md.
pub const METHOD_NAMES: &[&str] = &[
    "session.open",
    "session.submit",
    "session.watch",
    "session.unwatch",
    "session.cancel",
    "session.list",
    "session.history",
    "session.fork",
    "session.set_mode",
    "session.set_model",
    "session.set_effort",
    "session.compact",
    "session.clear",
    "session.delete",
    "session.undo",
    "command.list",
    "harness.list",
    "model.list",
    "permission.respond",
    "ui.respond",
    "tool.list",
    "tool.call",
    "tool.cancel",
    "kernel.status",
    "kernel.metrics",
    "kernel.shutdown",
    "schedule.add",
    "schedule.list",
    "schedule.remove",
    "schedule.resume",
    "trigger.fire",
    "memory.list",
    "memory.add",
    "memory.pin",
    "memory.remove",
    "artifact.list",
    "artifact.read",
];

fn is_false(b: &bool) -> bool {
    !*b
}

fn params<T: DeserializeOwned>(method: &str, params: Value) -> Result<T, ErrorObject> {
    let params = if params.is_null() { Value::Object(Default::default()) } else { params };
    serde_json::from_value(params)
        .map_err(|err| ErrorObject::new(codes::INVALID_PARAMS, format!("invalid params for {method}: {err}")))
}

impl Method {
    pub fn parse(method: &str, p: Value) -> Result<Method, ErrorObject> {
        Ok(match method {
            "session.open" => Method::SessionOpen(params(method, p)?),
            "session.submit" => Method::SessionSubmit(params(method, p)?),
            "session.watch" => Method::SessionWatch(params(method, p)?),
            "session.unwatch" => Method::SessionUnwatch(params(method, p)?),
            "session.cancel" => Method::SessionCancel(params(method, p)?),
            "session.list" => Method::SessionList(params(method, p)?),
            "session.history" => Method::SessionHistory(params(method, p)?),
            "session.fork" => Method::SessionFork(params(method, p)?),
            "session.set_mode" => Method::SessionSetMode(params(method, p)?),
            "session.set_model" => Method::SessionSetModel(params(method, p)?),
            "session.set_effort" => Method::SessionSetEffort(params(method, p)?),
            "session.compact" => Method::SessionCompact(params(method, p)?),
            "session.clear" => Method::SessionClear(params(method, p)?),
            "session.delete" => Method::SessionDelete(params(method, p)?),
            "session.undo" => Method::SessionUndo(params(method, p)?),
            "command.list" => Method::CommandList(params(method, p)?),
            "harness.list" => Method::HarnessList,
            "model.list" => Method::ModelList,
            "permission.respond" => Method::PermissionRespond(params(method, p)?),
            "ui.respond" => Method::UiRespond(params(method, p)?),
            "tool.list" => Method::ToolList(params(method, p)?),
            "tool.call" => Method::ToolCall(params(method, p)?),
            "tool.cancel" => Method::ToolCancel(params(method, p)?),
            "kernel.status" => Method::KernelStatus,
            "kernel.metrics" => Method::KernelMetrics,
            "kernel.shutdown" => Method::KernelShutdown,
            "schedule.add" => Method::ScheduleAdd(params(method, p)?),
            "schedule.list" => Method::ScheduleList(params(method, p)?),
            "schedule.remove" => Method::ScheduleRemove(params(method, p)?),
            "schedule.resume" => Method::ScheduleResume(params(method, p)?),
            "trigger.fire" => Method::TriggerFire(params(method, p)?),
            "memory.list" => Method::MemoryList(params(method, p)?),
            "memory.add" => Method::MemoryAdd(params(method, p)?),
            "memory.pin" => Method::MemoryPin(params(method, p)?),
            "memory.remove" => Method::MemoryRemove(params(method, p)?),
            "artifact.list" => Method::ArtifactList(params(method, p)?),
            "artifact.read" => Method::ArtifactRead(params(method, p)?),
            other => {
                return Err(ErrorObject::new(codes::METHOD_NOT_FOUND, format!("unknown method `{other}`")));
            }
        })
    }

    /// The method's name and params, for a client building a request.
    pub fn to_request(&self) -> (&'static str, Value) {
        fn v<T: Serialize>(t: &T) -> Value {
            serde_json::to_value(t).unwrap_or(Value::Null)
        }
        let empty = Value::Object(Default::default());
        match self {
            Method::SessionOpen(p) => ("session.open", v(p)),
            Method::SessionSubmit(p) => ("session.submit", v(p)),
            Method::SessionWatch(p) => ("session.watch", v(p)),
            Method::SessionUnwatch(p) => ("session.unwatch", v(p)),
            Method::SessionCancel(p) => ("session.cancel", v(p)),
            Method::SessionList(p) => ("session.list", v(p)),
            Method::SessionHistory(p) => ("session.history", v(p)),
            Method::SessionFork(p) => ("session.fork", v(p)),
            Method::SessionSetMode(p) => ("session.set_mode", v(p)),
            Method::SessionSetModel(p) => ("session.set_model", v(p)),
            Method::SessionSetEffort(p) => ("session.set_effort", v(p)),
            Method::SessionCompact(p) => ("session.compact", v(p)),
            Method::SessionClear(p) => ("session.clear", v(p)),
            Method::SessionDelete(p) => ("session.delete", v(p)),
            Method::SessionUndo(p) => ("session.undo", v(p)),
            Method::CommandList(p) => ("command.list", v(p)),
            Method::HarnessList => ("harness.list", empty.clone()),
            Method::ModelList => ("model.list", empty),
            Method::PermissionRespond(p) => ("permission.respond", v(p)),
            Method::UiRespond(p) => ("ui.respond", v(p)),
            Method::ToolList(p) => ("tool.list", v(p)),
            Method::ToolCall(p) => ("tool.call", v(p)),
            Method::ToolCancel(p) => ("tool.cancel", v(p)),
            Method::KernelStatus => ("kernel.status", Value::Object(Default::default())),
            Method::KernelMetrics => ("kernel.metrics", Value::Object(Default::default())),
            Method::KernelShutdown => ("kernel.shutdown", Value::Object(Default::default())),
            Method::ScheduleAdd(p) => ("schedule.add", v(p)),
            Method::ScheduleList(p) => ("schedule.list", v(p)),
            Method::ScheduleRemove(p) => ("schedule.remove", v(p)),
            Method::ScheduleResume(p) => ("schedule.resume", v(p)),
            Method::TriggerFire(p) => ("trigger.fire", v(p)),
            Method::MemoryList(p) => ("memory.list", v(p)),
            Method::MemoryAdd(p) => ("memory.add", v(p)),
            Method::MemoryPin(p) => ("memory.pin", v(p)),
            Method::MemoryRemove(p) => ("memory.remove", v(p)),
            Method::ArtifactList(p) => ("artifact.list", v(p)),
            Method::ArtifactRead(p) => ("artifact.read", v(p)),
        }
    }
}

/// `session.open`: a new conversation, or an existing one by id or by external id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<i64>,
    /// A frontend's own session key (ACP session id, gateway x-session-id); with
    /// `frontend` it maps durably to one conversation per principal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The thinking effort of a new conversation (one of its model's levels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `false`: only look up (`conversation_id` or `external_id`); a miss is NOT_FOUND
    /// instead of a new conversation. Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<bool>,
    /// MCP servers (an editor's) whose tools this conversation gets besides the user's own,
    /// until the kernel stops; given again, they replace those attached before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerParam>,
    /// Directories the conversation's tools may write besides its workspace, each checked as
    /// a workspace is; given, they replace those stored before (empty: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_dirs: Option<Vec<String>>,
    /// Instructions appended after the harness's system prompt; given, they replace those
    /// stored before (empty: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

/// An MCP server a frontend attaches to a conversation: a program (`command`, over stdio) or
/// a URL (`url`, over Streamable HTTP falling back to HTTP+SSE; with `sse`, HTTP+SSE only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerParam {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// With `url`: headers sent with every request.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub headers: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sse: bool,
}

/// What the kernel knows of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationInfo {
    pub conversation_id: i64,
    pub harness: String,
    pub model: String,
    pub mode: String,
    pub max_mode: String,
    /// The thinking effort its requests ask for; absent: the provider settings' default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    #[serde(default)]
    pub workspace: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub parent_id: Option<i64>,
    pub created_at_ms: i64,
    /// `idle` or `running`.
    pub status: String,
    /// The seq of the last stored event.
    pub head_seq: u64,
    /// True when `session.open` made it.
    #[serde(default)]
    pub created: bool,
    /// The repository rules files (`AGENTS.md`) its requests' system prompt holds, outermost
    /// first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules_files: Vec<String>,
    /// What it has cost so far in US dollars (its priced model calls; absent: none priced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// `session.submit`: a prompt starts a turn, or queues behind the running one, or (`steer`)
/// joins the running one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitParams {
    pub conversation_id: i64,
    /// The user message's content; plain text may be given as `prompt` instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// While a turn runs, add the prompt to it before its next model request instead of
    /// queueing a turn of its own (with no turn running it starts one as usual).
    #[serde(default, skip_serializing_if = "is_false")]
    pub steer: bool,
    /// Tools the submitting frontend offers this prompt's turn and runs itself: each call is
    /// a `ui_request` of kind `client_tool`, answered by `ui.respond`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_tools: Vec<ClientTool>,
    /// A JSON Schema (an object schema) the turn's final answer must meet: the answer is the
    /// JSON text of a value the schema accepts, or the turn fails saying why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// How a `turn_error` that an `output_schema` check ended begins (the refused answer's errors
/// follow), so a frontend can answer it in its protocol's own shape.
pub const OUTPUT_SCHEMA_FAILED: &str = "the answer does not match the output schema";

/// A tool a frontend runs (a web front end's own function), offered to one turn's model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The arguments' JSON schema (an object schema).
    pub input_schema: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmitResult {
    /// The turn that answers the prompt: its own, or the running one it steered.
    pub turn_id: i64,
    /// True when the turn waits behind a running one.
    pub queued: bool,
    /// True when the prompt joined the running turn `turn_id`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub steered: bool,
}

/// `session.watch`: a subscription to a conversation's events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchParams {
    pub conversation_id: i64,
    /// Replay stored events with a greater seq before live ones (catch-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_seq: Option<u64>,
    /// Events the kernel may send before an ack (default 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Only an interactive watcher is asked permission questions.
    #[serde(default)]
    pub interactive: bool,
    /// This watcher can answer `read_text_file` questions (an editor's unsaved buffers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reads_files: bool,
    /// This watcher can show the person a URL to open (a `ui_request` of kind `url`: an
    /// editor's URL elicitation), as an MCP server's OAuth login needs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub opens_urls: bool,
}

impl WatchParams {
    /// Live events only, not interactive, default window.
    pub fn live(conversation_id: i64) -> Self {
        WatchParams {
            conversation_id,
            from_seq: None,
            window: None,
            interactive: false,
            reads_files: false,
            opens_urls: false,
        }
    }

    /// Stored events with a seq greater than `seq` first, then live ones.
    pub fn after(conversation_id: i64, seq: u64) -> Self {
        Self::live(conversation_id).catch_up(Some(seq))
    }

    pub fn catch_up(mut self, from_seq: Option<u64>) -> Self {
        self.from_seq = from_seq;
        self
    }

    pub fn window(mut self, window: u64) -> Self {
        self.window = Some(window);
        self
    }

    pub fn interactive(mut self, interactive: bool) -> Self {
        self.interactive = interactive;
        self
    }

    pub fn reads_files(mut self, reads_files: bool) -> Self {
        self.reads_files = reads_files;
        self
    }

    pub fn opens_urls(mut self, opens_urls: bool) -> Self {
        self.opens_urls = opens_urls;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchResult {
    pub subscription: u64,
    /// The seq of the last stored event when the watch began.
    pub head_seq: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnwatchParams {
    pub subscription: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationRef {
    pub conversation_id: i64,
}

/// `session.undo`'s answer: the turn undone and its paths (relative to the workspace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UndoResult {
    pub turn_id: i64,
    /// Files the turn changed or deleted, as they were before it.
    pub restored: Vec<String>,
    /// Files the turn created, removed.
    pub removed: Vec<String>,
}

impl std::fmt::Display for UndoResult {
    /// One line: `turn 7 undone; restored a.txt; removed b.txt`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "turn {} undone", self.turn_id)?;
        for (verb, paths) in [("restored", &self.restored), ("removed", &self.removed)] {
            if !paths.is_empty() {
                write!(f, "; {verb} {}", paths.join(", "))?;
            }
        }
        Ok(())
    }
}

/// `session.undo`: put back what a turn changed in the workspace (its checkpoint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoParams {
    pub conversation_id: i64,
    /// The turn; without it, the latest turn that changed the workspace and is not undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// At most this many (default 100, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Skip this many of the latest first (the next page starts at the previous offset plus
    /// its length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
    /// The previous page's `next`: the page after it (however deep, as fast as the first).
    /// Opaque; not with `offset`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResult {
    pub conversations: Vec<ConversationInfo>,
    /// More conversations follow this page.
    #[serde(default)]
    pub more: bool,
    /// When more follow: the `cursor` of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `session.history`: one page of a conversation's entries, in seq order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryParams {
    pub conversation_id: i64,
    /// Only entries with a greater seq (the last seq of the previous page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
    /// At most this many entries (default and most: 1,000); a page also stops before 8 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryResult {
    pub conversation: ConversationInfo,
    pub entries: Vec<Entry>,
    /// More entries follow this page: ask again with `after_seq` the last entry's seq.
    #[serde(default)]
    pub more: bool,
    /// On the first page: the last `compaction_completed` event (its seq is its `compaction`
    /// entry's; its `head_entry_id` the first entry kept before it), so a view can show what
    /// the model still reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_compaction: Option<Event>,
    /// On the first page: the latest `plan_updated` event (the plan as it stands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_plan: Option<Event>,
}

/// `session.fork`: a new conversation holding the entries up to `at_seq` (all by default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkParams {
    pub conversation_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_seq: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetModeParams {
    pub conversation_id: i64,
    pub mode: String,
}

/// `session.set_model`: the model of the conversation's next turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetModelParams {
    pub conversation_id: i64,
    pub model: String,
}

/// `session.set_effort`: the thinking effort of the conversation's next requests; `null`
/// goes back to the provider settings' default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetEffortParams {
    pub conversation_id: i64,
    pub effort: Option<Effort>,
}

/// `command.list`: the user-defined commands of the config dir, and of a conversation's
/// workspace when one is named.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<i64>,
}

/// A user-defined command, called in a prompt as `/NAME ARGS`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandInfo {
    pub name: String,
    pub description: String,
    /// What the arguments are (front matter `argument-hint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// `config` (the user's) or `workspace` (the project's, which wins).
    pub source: String,
}

/// `command.list`'s answer, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandListResult {
    pub commands: Vec<CommandInfo>,
}

/// A model `model.list` offers: the configured providers' models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    pub provider: String,
    #[serde(default)]
    pub default: bool,
    /// The thinking efforts it takes, from the least (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub efforts: Vec<Effort>,
}

/// `tool.cancel`: ends a running `tool.call` started with this `call_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCancelParams {
    pub call_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionRespondParams {
    pub request_id: String,
    pub option_id: String,
}

/// A harness as `harness.list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessInfo {
    pub id: String,
    pub name: String,
    pub description: String,
    pub default_mode: String,
    pub max_mode: String,
    pub tools: Vec<String>,
    /// `repo` (a workspace directory) or `none`.
    pub workspace: String,
    /// The agent backend that runs its turns (`codex`, `claude-code`, `gemini-cli`,
    /// `opencode`), when it is not a model's harness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Its agent backend takes no thinking effort (OpenCode): `session.set_effort` is refused,
    /// and a frontend offers no effort setting.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_effort: bool,
    /// The capability blocks it takes (`web`, `memory`, `schedule`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

/// `harness.list`'s word on one agent backend: its program and version, whether a turn can
/// run on it, or why it cannot be used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendStatus {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its program was found (configured or on PATH).
    #[serde(default)]
    pub installed: bool,
    /// A turn can run on it: installed, answering `--version`, and driven by superpi.
    #[serde(default)]
    pub usable: bool,
    /// Why it is not usable (no program, one that does not answer `--version`, or one superpi
    /// does not drive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// `ui.respond`: the answer to a `ui_request` (for `read_text_file`: `{"content": TEXT}` or
/// `{"use_disk": true}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiRespondParams {
    pub request_id: String,
    pub outcome: Value,
}

/// `tool.list`: the tools a harness offers (default harness when absent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolListResult {
    pub tools: Vec<crate::tool::ToolDef>,
}

/// `tool.call`: one tool call outside any turn (the MCP server's tools). It goes through the
/// policy in the caller's mode (remote callers: the remote mode) and runs confined. An unknown
/// tool is METHOD_NOT_FOUND, arguments that do not fit its schema INVALID_PARAMS; a refusal or
/// a failing tool is a result with `is_error` (and `details.blocked`: the rule, and the risk
/// when the call was askable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallParams {
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
    /// The workspace root (absolute); default: the kernel's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// A caller's id for this call, so `tool.cancel` can end it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The person behind the caller consented to this call (an MCP host asked its user): a
    /// decision that would ask runs as answered `allow_once`. Refusals that are never askable
    /// (deny list, workspace, protected paths, network policy, plan) stay refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub consented: bool,
}

/// `tool.call`'s result: the one result type of a tool call.
pub use crate::tool::ToolCallResult;

/// `kernel.metrics`: what the kernel counted since it started (turns, model requests, tokens,
/// tool calls, errors, durations), for a metrics endpoint to render.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsResult {
    pub families: Vec<MetricFamily>,
}

/// One metric: its name, what it counts, its kind and a sample per set of labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricFamily {
    pub name: String,
    pub help: String,
    pub kind: MetricKind,
    pub samples: Vec<MetricSample>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    Counter,
    Histogram,
}

/// One sample. A counter has its value; a histogram its sum, count and cumulative buckets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSample {
    pub labels: std::collections::BTreeMap<String, String>,
    /// A counter's value, a histogram's sum.
    pub value: f64,
    /// A histogram's count of observations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// A histogram's buckets: (upper bound, observations at most that), ascending; the `+Inf`
    /// bucket is `count`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<(f64, u64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelStatus {
    pub pid: u32,
    pub version: String,
    pub uptime_ms: u64,
    pub clients: u64,
    pub live_conversations: u64,
    /// This kernel's id in the store's leases (unique per start).
    #[serde(default)]
    pub kernel_id: String,
    /// The conversations this kernel runs (holds the leases of), in id order.
    #[serde(default)]
    pub owned_conversations: Vec<i64>,
    pub data_dir: String,
    pub socket: String,
    /// The external MCP servers the kernel holds (for local callers only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerStatus>,
}

/// One external MCP server the kernel holds: one per workspace and server definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerStatus {
    pub name: String,
    pub workspace: String,
    /// `starting`, `running`, `stopped` (its process exited; started again at the next need)
    /// or `failed` (it did not start; tried again at the next need).
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Its tools as the model sees them (`mcp__SERVER__TOOL`).
    #[serde(default)]
    pub tools: Vec<String>,
    /// The live conversations that attached it.
    #[serde(default)]
    pub conversations: Vec<i64>,
    /// Since its last use.
    pub idle_ms: u64,
    /// Why it failed or stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_tells_unknown_method_from_bad_params() {
        let err = Method::parse("session.nope", json!({})).unwrap_err();
        assert_eq!(err.code, codes::METHOD_NOT_FOUND);
        let err = Method::parse("session.submit", json!({"prompt": "hi"})).unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMS);
        let err = Method::parse("session.open", json!({"bogus": 1})).unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMS);
        assert_eq!(Method::parse("harness.list", Value::Null).unwrap(), Method::HarnessList);
    }

    #[test]
    fn every_method_round_trips_through_its_request() {
        let methods = vec![
            Method::SessionOpen(OpenParams { harness: Some("superpi-code".into()), ..Default::default() }),
            Method::SessionSubmit(SubmitParams { conversation_id: 1, prompt: Some("hi".into()), ..Default::default() }),
            Method::SessionWatch(WatchParams {
                conversation_id: 1,
                from_seq: Some(3),
                window: None,
                interactive: true,
                reads_files: true,
                opens_urls: true,
            }),
            Method::SessionUnwatch(UnwatchParams { subscription: 2 }),
            Method::SessionCancel(ConversationRef { conversation_id: 1 }),
            Method::SessionList(ListParams::default()),
            Method::SessionDelete(ConversationRef { conversation_id: 1 }),
            Method::SessionHistory(HistoryParams { conversation_id: 1, after_seq: Some(3), limit: None }),
            Method::SessionFork(ForkParams { conversation_id: 1, at_seq: Some(4) }),
            Method::SessionSetMode(SetModeParams { conversation_id: 1, mode: "plan".into() }),
            Method::SessionSetModel(SetModelParams { conversation_id: 1, model: "mock".into() }),
            Method::SessionSetEffort(SetEffortParams { conversation_id: 1, effort: Some(Effort::High) }),
            Method::HarnessList,
            Method::ModelList,
            Method::PermissionRespond(PermissionRespondParams {
                request_id: "r".into(),
                option_id: "allow_once".into(),
            }),
            Method::UiRespond(UiRespondParams {
                request_id: "u1".into(),
                outcome: serde_json::json!({"use_disk": true}),
            }),
            Method::SessionCompact(ConversationRef { conversation_id: 3 }),
            Method::SessionClear(ConversationRef { conversation_id: 3 }),
            Method::SessionUndo(UndoParams { conversation_id: 3, turn_id: Some(7) }),
            Method::CommandList(CommandListParams { conversation_id: Some(3) }),
            Method::ToolList(ToolListParams::default()),
            Method::ToolCall(ToolCallParams {
                name: "ls".into(),
                arguments: serde_json::json!({"path": "."}),
                workspace: Some("/w".into()),
                harness: None,
                mode: None,
                call_id: Some("c1".into()),
                consented: true,
            }),
            Method::ToolCancel(ToolCancelParams { call_id: "c1".into() }),
            Method::KernelStatus,
            Method::KernelMetrics,
            Method::KernelShutdown,
            Method::ScheduleAdd(crate::schedule::ScheduleAddParams {
                prompt: "digest".into(),
                cron: Some("0 7 * * *".into()),
                timezone: Some("Europe/London".into()),
                ..Default::default()
            }),
            Method::ScheduleList(crate::schedule::ScheduleListParams { runs: Some(3) }),
            Method::ScheduleRemove(crate::schedule::ScheduleRemoveParams { id: 4 }),
            Method::ScheduleResume(crate::schedule::ScheduleResumeParams { id: 4 }),
            Method::TriggerFire(crate::schedule::TriggerFireParams {
                token: "t".into(),
                body: "{}".into(),
                signature: Some("sha256=00".into()),
                bearer: None,
                timestamp: Some("1800000000".into()),
                delivery: Some("d-1".into()),
                idempotency_key: Some("build-1".into()),
            }),
            Method::MemoryList(crate::memory::MemoryListParams { limit: Some(5) }),
            Method::MemoryAdd(crate::memory::MemoryAddParams {
                title: "Tea".into(),
                body: "Green".into(),
                tags: vec!["drink".into()],
                workspace: Some("/w".into()),
                source: None,
                pinned: true,
            }),
            Method::MemoryPin(crate::memory::MemoryPinParams { id: 2, pinned: false }),
            Method::MemoryRemove(crate::memory::MemoryRemoveParams { id: 2 }),
            Method::ArtifactList(crate::artifact::ArtifactListParams { conversation_id: Some(3) }),
            Method::ArtifactRead(crate::artifact::ArtifactReadParams { conversation_id: 3, name: "a.csv".into() }),
        ];
        assert_eq!(methods.len(), METHOD_NAMES.len());
        for m in methods {
            let (name, params) = m.to_request();
            assert!(METHOD_NAMES.contains(&name));
            assert_eq!(Method::parse(name, params).unwrap(), m);
        }
    }
}

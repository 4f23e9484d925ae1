//! The wire types: this server's method params and results, converted by hand to and from
//! the kernel's types, and kernel errors turned into this protocol's codes.
//!
//! Pure code. Params are read strictly (unknown fields are invalid params); results are
//! built field by field so a change in the kernel's types never leaks onto this wire.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use superpi_client::ClientError;
use superpi_proto::method::{ConversationInfo, HarnessInfo, HistoryResult, SubmitResult};
use superpi_proto::schedule::ScheduleInfo;
use superpi_proto::{ContentBlock, Effort, Entry};

use crate::envelope::{RpcError, codes};

/// Reads a method's params: absent or null params read as `{}`.
pub fn parse<T: DeserializeOwned>(method: &str, params: Option<&str>) -> Result<T, RpcError> {
    let text = match params.map(str::trim) {
        None | Some("null") => "{}",
        Some(text) => text,
    };
    serde_json::from_str(text).map_err(|err| {
        RpcError::new(codes::INVALID_PARAMS, format!("invalid params for {method}: {err}"))
            .with_data(Value::from(err.to_string()))
    })
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginParams {
    pub token: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenParams {
    #[serde(default)]
    pub conversation_id: Option<i64>,
    #[serde(default)]
    pub external_id: Option<String>,
    #[serde(default)]
    pub harness: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    /// The thinking effort of a new conversation.
    #[serde(default)]
    pub effort: Option<Effort>,
    #[serde(default)]
    pub title: Option<String>,
    /// `false`: only look up (by `conversation_id` or `external_id`); a miss is not found.
    #[serde(default)]
    pub create: Option<bool>,
}

impl OpenParams {
    /// The kernel's params; the workspace is the server's, never the caller's.
    pub fn to_kernel(&self, workspace: Option<&str>) -> superpi_proto::method::OpenParams {
        superpi_proto::method::OpenParams {
            conversation_id: self.conversation_id,
            external_id: self.external_id.clone(),
            harness: self.harness.clone(),
            model: self.model.clone(),
            mode: self.mode.clone(),
            effort: self.effort,
            workspace: workspace.map(String::from),
            title: self.title.clone(),
            create: self.create,
            ..Default::default()
        }
    }
}

/// A part of a prompt: text, or an image by its bytes (base64).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Part {
    Text { text: String },
    Image { media_type: String, data: String },
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitParams {
    pub conversation_id: i64,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub content: Vec<Part>,
    /// Join the running turn instead of queueing (see the kernel's `session.submit`).
    #[serde(default)]
    pub steer: bool,
    /// A JSON Schema the turn's final answer must meet (see the kernel's `session.submit`).
    #[serde(default)]
    pub output_schema: Option<serde_json::Value>,
}

impl SubmitParams {
    pub fn to_kernel(&self) -> Result<superpi_proto::method::SubmitParams, RpcError> {
        let mut content: Vec<ContentBlock> = Vec::new();
        if let Some(prompt) = &self.prompt {
            content.push(ContentBlock::text(prompt.clone()));
        }
        content.extend(self.content.iter().map(|part| match part {
            Part::Text { text } => ContentBlock::text(text.clone()),
            Part::Image { media_type, data } => ContentBlock::image(media_type.clone(), data.clone()),
        }));
        let has_some = content.iter().any(|b| match b {
            ContentBlock::Text { text } => !text.trim().is_empty(),
            ContentBlock::Image { .. } => true,
            _ => false,
        });
        if !has_some {
            return Err(RpcError::new(
                codes::INVALID_PARAMS,
                "session.submit needs text or an image: give `prompt`, or `text` or `image` content",
            ));
        }
        Ok(superpi_proto::method::SubmitParams {
            conversation_id: self.conversation_id,
            content,
            prompt: None,
            steer: self.steer,
            client_tools: Vec::new(),
            output_schema: self.output_schema.clone(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchParams {
    pub conversation_id: i64,
    /// Replay stored events after this seq first (0: the whole stored history).
    #[serde(default)]
    pub from_seq: Option<u64>,
    /// Only an interactive watcher is asked permission questions.
    #[serde(default)]
    pub interactive: bool,
    /// This client answers `ui_request`s of kind `read_text_file` (an editor with unsaved
    /// buffers) with `ui.respond`.
    #[serde(default)]
    pub reads_files: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckParams {
    pub watch: u64,
    pub batch: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnwatchParams {
    pub watch: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationParams {
    pub conversation_id: i64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoParams {
    pub conversation_id: i64,
    #[serde(default)]
    pub turn_id: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkParams {
    pub conversation_id: i64,
    #[serde(default)]
    pub at_seq: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub offset: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryParams {
    pub conversation_id: i64,
    #[serde(default)]
    pub after_seq: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetModeParams {
    pub conversation_id: i64,
    pub mode: String,
}

/// `session.set_effort`: `effort` is a level or `null` (the provider settings' default).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetEffortParams {
    pub conversation_id: i64,
    pub effort: Option<Effort>,
}

/// `ui.respond`: `option_id` answers a `permission_request`, `outcome` a `ui_request`;
/// exactly one of them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RespondParams {
    pub request_id: String,
    #[serde(default)]
    pub option_id: Option<String>,
    #[serde(default)]
    pub outcome: Option<Value>,
}

/// Where a `ui.respond` goes in the kernel.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `permission.respond` with this option.
    Permission(String),
    /// `ui.respond` with this outcome.
    Ui(Value),
}

impl RespondParams {
    pub fn answer(self) -> Result<Answer, RpcError> {
        match (self.option_id, self.outcome) {
            (Some(option), None) => Ok(Answer::Permission(option)),
            (None, Some(outcome)) => Ok(Answer::Ui(outcome)),
            _ => Err(RpcError::new(
                codes::INVALID_PARAMS,
                "ui.respond takes exactly one of `option_id` (a permission_request) and `outcome` (a ui_request)",
            )),
        }
    }
}

/// Params of the methods that take none: only `{}`, `[]` or nothing.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleListParams {
    #[serde(default)]
    pub runs: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleAddParams {
    pub prompt: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub cron: Option<String>,
    #[serde(default)]
    pub timezone: Option<String>,
    #[serde(default)]
    pub webhook: bool,
    #[serde(default)]
    pub conversation_id: Option<i64>,
    #[serde(default)]
    pub harness: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub catch_up: Option<bool>,
    #[serde(default)]
    pub max_failures: Option<u32>,
}

impl ScheduleAddParams {
    /// The kernel's params; a new conversation works in this server's workspace.
    pub fn to_kernel(&self, workspace: Option<&str>) -> superpi_proto::schedule::ScheduleAddParams {
        superpi_proto::schedule::ScheduleAddParams {
            prompt: self.prompt.clone(),
            name: self.name.clone(),
            cron: self.cron.clone(),
            timezone: self.timezone.clone(),
            webhook: self.webhook,
            conversation_id: self.conversation_id,
            harness: self.harness.clone(),
            workspace: self.conversation_id.is_none().then(|| workspace.map(str::to_string)).flatten(),
            mode: self.mode.clone(),
            catch_up: self.catch_up,
            max_failures: self.max_failures,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRemoveParams {
    pub id: i64,
}

/// A schedule as this server describes it, with its latest runs.
pub fn schedule(info: &ScheduleInfo) -> Value {
    let runs: Vec<Value> = info
        .runs
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "due_at_ms": r.due_at_ms,
                "started_at_ms": r.started_at_ms,
                "turn_id": r.turn_id,
                "status": r.status,
                "error": r.error,
            })
        })
        .collect();
    json!({
        "id": info.id,
        "name": info.name,
        "kind": info.kind,
        "conversation_id": info.conversation_id,
        "prompt": info.prompt,
        "cron": info.cron,
        "timezone": info.timezone,
        "next_at_ms": info.next_at_ms,
        "ceiling": info.ceiling,
        "created_at_ms": info.created_at_ms,
        "run_count": info.run_count,
        "failures": info.failures,
        "mode": info.mode,
        "catch_up": info.catch_up,
        "max_failures": info.max_failures,
        "paused_at_ms": info.paused_at_ms,
        "runs": runs,
    })
}

/// A conversation as this server describes it.
pub fn conversation(info: &ConversationInfo) -> Value {
    json!({
        "conversation_id": info.conversation_id,
        "harness": info.harness,
        "model": info.model,
        "mode": info.mode,
        "max_mode": info.max_mode,
        "effort": info.effort,
        "title": info.title,
        "parent_id": info.parent_id,
        "created_at_ms": info.created_at_ms,
        "status": info.status,
        "head_seq": info.head_seq,
        "created": info.created,
        "rules_files": info.rules_files,
    })
}

pub fn submitted(result: &SubmitResult) -> Value {
    json!({"turn_id": result.turn_id, "queued": result.queued})
}

/// A stored entry: its message's content blocks keep the one wire form of the events.
pub fn entry(entry: &Entry) -> Value {
    let content = serde_json::to_value(&entry.message.content).unwrap_or(Value::Array(Vec::new()));
    let mut value = json!({
        "seq": entry.seq,
        "kind": entry.kind.as_str(),
        "turn_id": entry.turn_id,
        "role": entry.message.role.as_str(),
        "content": content,
        "created_at_ms": entry.created_at_ms,
    });
    if let Some(usage) = &entry.message.usage {
        value["usage"] = json!({"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens});
    }
    if let Some(stop) = &entry.message.stop_reason {
        value["stop_reason"] = Value::from(stop.clone());
    }
    value
}

pub fn history(result: &HistoryResult) -> Value {
    let mut value = json!({
        "conversation": conversation(&result.conversation),
        "entries": result.entries.iter().map(entry).collect::<Vec<_>>(),
        "more": result.more,
    });
    // Events keep the kernel's wire form here as in `session.event`.
    for (key, event) in [("last_compaction", &result.last_compaction), ("last_plan", &result.last_plan)] {
        if let Some(event) = event {
            value[key] = event.to_wire();
        }
    }
    value
}

pub fn harness(info: &HarnessInfo) -> Value {
    json!({
        "id": info.id,
        "name": info.name,
        "description": info.description,
        "default_mode": info.default_mode,
        "max_mode": info.max_mode,
        "tools": info.tools,
        "workspace": info.workspace,
    })
}

/// A kernel error in this protocol's codes. Another principal's conversation reaches us as
/// the kernel's NOT_FOUND, the same answer as a missing one, and stays exactly that.
pub fn kernel_error(err: ClientError) -> RpcError {
    match err {
        ClientError::Kernel(e) => {
            let code = match e.code {
                code @ (codes::NOT_FOUND
                | codes::INVALID_PARAMS
                | codes::FORBIDDEN
                | codes::UNAUTHORIZED
                | codes::PROVIDER) => code,
                _ => codes::INTERNAL_ERROR,
            };
            RpcError { code, message: e.message, data: e.data }
        }
        ClientError::Closed => RpcError::new(codes::INTERNAL_ERROR, "the kernel connection is closed"),
        other => RpcError::new(codes::INTERNAL_ERROR, other.to_string()),
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

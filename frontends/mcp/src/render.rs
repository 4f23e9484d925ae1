//! `harness_task`'s renderer: the kernel events of one turn into progress messages and the
//! final MCP result. A synchronous state machine, no I/O.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use superpi_proto::{ContentBlock as KernelBlock, Event, EventBody, Role};

/// What the renderer asks the transport to do.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOut {
    /// A progress notification (only sent when the request carried a progress token).
    Progress { progress: f64, message: String },
    /// The turn ended; this is the answer to the `tools/call` request.
    Finished(TaskOutcome),
}

/// How the turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOutcome {
    pub status: TaskStatus,
    pub harness: String,
    pub conversation_id: i64,
    pub turn_id: Option<i64>,
    /// The answer text, or the error.
    pub text: String,
    /// The accepted answer of a turn held to an output schema, parsed.
    pub structured_output: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TaskStatus {
    Completed { stop_reason: String },
    Failed,
    Cancelled,
}

/// Renders one turn of one conversation. Events of other turns (earlier history replayed by
/// the watch, or a turn queued by someone else) are skipped.
#[derive(Debug)]
pub struct TaskRenderer {
    harness: String,
    conversation_id: i64,
    turn_id: Option<i64>,
    progress: f64,
    /// The assistant's text of the last completed message, in case the turn's end carries none.
    last_text: String,
    done: bool,
    /// The turn has an output schema: its answer is parsed into `structured_output`.
    structured: bool,
}

impl TaskRenderer {
    pub fn new(harness: &str, conversation_id: i64) -> Self {
        TaskRenderer {
            harness: harness.to_string(),
            conversation_id,
            turn_id: None,
            progress: 0.0,
            last_text: String::new(),
            done: false,
            structured: false,
        }
    }

    /// The turn has an output schema: a completed turn's answer (the accepted JSON) is also
    /// given parsed, as `structured_output`.
    pub fn structured(mut self, structured: bool) -> Self {
        self.structured = structured;
        self
    }

    /// The turn to follow, once `session.submit` has named it.
    pub fn follow_turn(&mut self, turn_id: i64) {
        self.turn_id = Some(turn_id);
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    fn step(&mut self, message: String) -> TaskOut {
        self.progress += 1.0;
        TaskOut::Progress { progress: self.progress, message }
    }

    fn finish(&mut self, status: TaskStatus, text: String) -> TaskOut {
        self.done = true;
        let structured_output = match (&status, self.structured) {
            (TaskStatus::Completed { .. }, true) => serde_json::from_str(&text).ok(),
            _ => None,
        };
        TaskOut::Finished(TaskOutcome {
            structured_output,
            status,
            harness: self.harness.clone(),
            conversation_id: self.conversation_id,
            turn_id: self.turn_id,
            text,
        })
    }

    pub fn render(&mut self, event: &Event) -> Vec<TaskOut> {
        if self.done || event.conversation_id != self.conversation_id {
            return Vec::new();
        }
        match (self.turn_id, event.turn_id) {
            (Some(ours), Some(theirs)) if ours != theirs => return Vec::new(),
            // Before submit answered, nothing is known to be ours.
            (None, _) => return Vec::new(),
            _ => {}
        }
        match &event.body {
            EventBody::TurnStarted {} => vec![self.step("turn started".to_string())],
            EventBody::Handoff { from, to, .. } => vec![self.step(format!("handed from {from} to {to}"))],
            EventBody::ToolStarted { name, .. } => vec![self.step(format!("running {name}"))],
            EventBody::ToolBlocked { name, reason, .. } => vec![self.step(format!("{name} blocked: {reason}"))],
            EventBody::ToolCompleted { name, is_error, .. } => {
                let outcome = if *is_error { "failed" } else { "done" };
                vec![self.step(format!("{name} {outcome}"))]
            }
            EventBody::MessageCompleted { role: Role::Assistant, content, .. } => {
                let text: String = content
                    .iter()
                    .filter_map(|b| match b {
                        KernelBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls = content.iter().filter(|b| matches!(b, KernelBlock::ToolCall { .. })).count();
                if !text.is_empty() {
                    self.last_text = text;
                }
                let message = if calls > 0 {
                    format!("model answered with {calls} tool call(s)")
                } else {
                    "model answered".to_string()
                };
                vec![self.step(message)]
            }
            EventBody::TurnCompleted { stop_reason, result } => {
                let text = result.clone().filter(|r| !r.is_empty()).unwrap_or_else(|| self.last_text.clone());
                vec![self.finish(TaskStatus::Completed { stop_reason: stop_reason.clone() }, text)]
            }
            EventBody::TurnError { error } => vec![self.finish(TaskStatus::Failed, error.clone())],
            EventBody::TurnCancelled {} => {
                vec![self.finish(TaskStatus::Cancelled, "the turn was cancelled".to_string())]
            }
            _ => Vec::new(),
        }
    }
}

impl TaskOutcome {
    fn structured(&self) -> Value {
        let mut value = json!({
            "harness": self.harness,
            "conversation_id": self.conversation_id,
        });
        if let Some(turn_id) = self.turn_id {
            value["turn_id"] = json!(turn_id);
        }
        match &self.status {
            TaskStatus::Completed { stop_reason } => {
                value["stop_reason"] = json!(stop_reason);
                value["result"] = json!(self.text);
                if let Some(object) = &self.structured_output {
                    value["structured_output"] = object.clone();
                }
            }
            TaskStatus::Failed => value["stop_reason"] = json!("error"),
            TaskStatus::Cancelled => value["stop_reason"] = json!("cancelled"),
        }
        value
    }

    /// The `tools/call` result: the answer as text, harness and conversation as
    /// structuredContent; a failed or cancelled turn is an `isError` result.
    pub fn into_result(self) -> CallToolResult {
        let structured = self.structured();
        let content = vec![ContentBlock::text(self.text.clone())];
        let mut result = match self.status {
            TaskStatus::Completed { .. } => CallToolResult::success(content),
            TaskStatus::Failed | TaskStatus::Cancelled => CallToolResult::error(content),
        };
        result.structured_content = Some(structured);
        result
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

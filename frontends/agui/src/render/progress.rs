//! What AG-UI 1.0 gives events of their own: a tool call's output as an activity, a
//! subagent's start and end, a question as the run's interrupt, and a call of a client tool
//! as the run's pending tool call.

use serde_json::{Value, json};

use super::Renderer;
use superpi_proto::question::QuestionRequest;

use crate::request::{QUESTION, interrupt_id};
use crate::wire::{AguiEvent, Interrupt, Outcome};

/// The activity type of a tool call's output.
pub const TOOL_OUTPUT: &str = "superpi.tool_output";

/// A subagent's run id: its child conversation, new for every invocation.
fn subagent_run_id(child: i64) -> String {
    format!("subagent-{child}")
}

fn activity_id(tool_call_id: &str) -> String {
    format!("activity-{tool_call_id}")
}

impl Renderer {
    /// A chunk of a running call's output: the call's activity opens with it, later chunks
    /// are appended by patch.
    pub(super) fn tool_output(&mut self, tool_call_id: &str, name: &str, chunk: &str, out: &mut Vec<AguiEvent>) {
        let message_id = activity_id(tool_call_id);
        let activity_type = TOOL_OUTPUT.to_string();
        if self.activities.iter().any(|id| id == tool_call_id) {
            let patch = json!([{"op": "add", "path": "/output/-", "value": chunk}]);
            out.push(AguiEvent::ActivityDelta { message_id, activity_type, patch: patch_of(patch) });
            return;
        }
        self.activities.push(tool_call_id.to_string());
        let content = json!({"toolCallId": tool_call_id, "toolName": name, "status": "running", "output": [chunk]});
        out.push(AguiEvent::ActivitySnapshot { message_id, activity_type, content });
    }

    /// The end of a call whose output was shown as an activity.
    pub(super) fn tool_output_ended(&mut self, tool_call_id: &str, is_error: bool, out: &mut Vec<AguiEvent>) {
        let Some(at) = self.activities.iter().position(|id| id == tool_call_id) else { return };
        self.activities.remove(at);
        let status = if is_error { "error" } else { "completed" };
        let patch = json!([{"op": "replace", "path": "/status", "value": status}]);
        out.push(AguiEvent::ActivityDelta {
            message_id: activity_id(tool_call_id),
            activity_type: TOOL_OUTPUT.to_string(),
            patch: patch_of(patch),
        });
    }

    pub(super) fn subagent_started(&mut self, child: i64, role: &str, task: &str, out: &mut Vec<AguiEvent>) {
        self.close_streams(out);
        let subagent_run_id = subagent_run_id(child);
        self.subagents.push(child);
        out.push(AguiEvent::SubagentStarted {
            subagent_run_id,
            name: role.to_string(),
            description: (!task.is_empty()).then(|| task.to_string()),
        });
    }

    /// A subagent this run saw start ends: finished when it completed, an error otherwise.
    pub(super) fn subagent_finished(&mut self, child: i64, status: &str, summary: &str, out: &mut Vec<AguiEvent>) {
        let Some(at) = self.subagents.iter().position(|c| *c == child) else { return };
        self.subagents.remove(at);
        self.close_streams(out);
        let subagent_run_id = subagent_run_id(child);
        out.push(match status {
            "completed" => AguiEvent::SubagentFinished { subagent_run_id, result: Some(json!(summary)) },
            other => AguiEvent::SubagentError {
                subagent_run_id,
                message: if summary.is_empty() { format!("the subagent ended {other}") } else { summary.to_string() },
                code: Some(other.to_string()),
            },
        });
    }

    /// Subagents still open when the run ends (the turn failed or was cancelled under them).
    pub(super) fn close_subagents(&mut self, out: &mut Vec<AguiEvent>) {
        for child in std::mem::take(&mut self.subagents) {
            out.push(AguiEvent::SubagentError {
                subagent_run_id: subagent_run_id(child),
                message: "the run ended before the subagent did".into(),
                code: Some("run_ended".into()),
            });
        }
    }

    /// A permission question as the run's interrupt: the run ends, and the next run's
    /// `resume` answers it with `{"optionId"}` (or cancels it, which refuses the call).
    pub(super) fn interrupt(&self, question: &Value, seq: u64) -> Interrupt {
        let text = |key: &str| question.get(key).and_then(Value::as_str).map(str::to_string);
        let request_id = text("requestId").unwrap_or_default();
        let turn = self.turn.map(|(t, _)| t).unwrap_or(0);
        let options = question.get("options").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let ids: Vec<&Value> = options.iter().filter_map(|o| o.get("optionId")).collect();
        Interrupt {
            id: interrupt_id(&request_id, turn, seq),
            reason: "permission".into(),
            message: text("reason"),
            tool_call_id: text("toolCallId"),
            response_schema: Some(json!({
                "type": "object",
                "properties": {"optionId": {"type": "string", "enum": ids}},
                "required": ["optionId"],
            })),
            metadata: Some(question.clone()),
        }
    }

    /// The model's question (`ask_question`) as the run's interrupt: its response schema is
    /// the questions' form, its payload on resume the answers (`request::QUESTION` marks its id).
    pub(super) fn question_interrupt(&self, request_id: &str, question: &QuestionRequest, seq: u64) -> Interrupt {
        let turn = self.turn.map(|(t, _)| t).unwrap_or(0);
        let mut metadata = serde_json::to_value(question).unwrap_or(Value::Null);
        if let Some(map) = metadata.as_object_mut() {
            map.insert("requestId".into(), json!(request_id));
        }
        Interrupt {
            id: interrupt_id(&format!("{QUESTION}{request_id}"), turn, seq),
            reason: "question".into(),
            message: Some(question.message()),
            tool_call_id: Some(question.tool_call_id.clone()),
            response_schema: Some(question.form_schema()),
            metadata: Some(metadata),
        }
    }

    /// Ends the run on an interrupt or a client tool's call.
    pub(super) fn pause_run(&mut self, outcome: Outcome, out: &mut Vec<AguiEvent>) {
        self.close_streams(out);
        self.finish_run(out, None, outcome);
    }
}

fn patch_of(value: Value) -> json_patch::Patch {
    serde_json::from_value(value).unwrap_or(json_patch::Patch(Vec::new()))
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;

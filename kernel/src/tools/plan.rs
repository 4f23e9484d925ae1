//! The plan tool (`update_plan`, as Codex names it): the model records its plan as a list of
//! steps, each pending, in progress or completed, and calls it again as the work moves on.
//! Each call publishes `plan_updated` on the conversation of the turn that made it, which ACP
//! shows as a `plan` session update, AG-UI as state, the terminal as a list.
//!
//! It is a registered tool (`ToolRegistry::register`) whose runner runs in the kernel's
//! process: it touches no file and runs nothing, so it needs no confinement. Its effect is
//! `read` (it changes nothing but what the person is shown, like an answer's text), so every
//! mode lets it through and the planner offers it; it is `turn_only`, since only a turn has a
//! conversation to show the plan in.

use serde::Deserialize;
use serde_json::json;
use superpi_proto::Event;
use superpi_proto::event::PlanEntry;
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::kernel::KernelSlot;
use crate::sync::lock;

/// The tool's name.
pub(crate) const NAME: &str = "update_plan";

/// Most steps one plan holds.
const MAX_STEPS: usize = 100;

/// The tool's facts.
pub(crate) fn def() -> ToolDef {
    ToolDef {
        name: NAME.into(),
        description: "Record your plan for the task as a short list of steps, and update it as you work: \
                      mark a step in_progress when you start it and completed when it is done (at most one \
                      step in progress). Each call replaces the whole plan; the person sees it as you go. \
                      Use it for work of several steps, not for a single quick action."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "explanation": {"type": "string", "description": "Why the plan changed (optional)"},
                "plan": {
                    "type": "array",
                    "description": "Every step of the plan, in order",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string", "description": "What the step does, in a few words"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["step", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["plan"],
            "additionalProperties": false
        }),
        effects: vec![Effect::Read],
        ui: ToolUi { kind: ToolKind::Think, title: Some("Update the plan".into()), ..ToolUi::default() },
        turn_only: true,
        ..ToolDef::default()
    }
}

/// The runner: checks the plan and publishes it on the calling turn's conversation.
pub(crate) struct PlanTool {
    pub kernel: KernelSlot,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    explanation: Option<String>,
    plan: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    step: String,
    status: Status,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Completed,
}

/// The plan's entries from the call's arguments, or why they are not a plan.
fn entries(arguments: &serde_json::Value) -> Result<(Vec<PlanEntry>, Option<String>), String> {
    let args: Args = serde_json::from_value(arguments.clone()).map_err(|e| format!("not a plan: {e}"))?;
    if args.plan.len() > MAX_STEPS {
        return Err(format!("a plan holds at most {MAX_STEPS} steps, not {}", args.plan.len()));
    }
    if args.plan.iter().filter(|s| s.status == Status::InProgress).count() > 1 {
        return Err("at most one step can be in_progress".into());
    }
    if let Some(n) = args.plan.iter().position(|s| s.step.trim().is_empty()) {
        return Err(format!("step {} says nothing", n + 1));
    }
    let entries = args
        .plan
        .iter()
        .enumerate()
        .map(|(i, s)| PlanEntry {
            id: (i + 1).to_string(),
            text: s.step.trim().to_string(),
            completed: s.status == Status::Completed,
        })
        .collect();
    Ok((entries, args.explanation.filter(|e| !e.trim().is_empty())))
}

impl ToolRunner for PlanTool {
    fn run<'a>(&'a self, call: &'a ToolCall, _: CancellationToken, _: Option<mpsc::Sender<String>>) -> RunFuture<'a> {
        Box::pin(async move {
            let (entries, explanation) = match entries(&call.arguments) {
                Ok(plan) => plan,
                Err(why) => return ToolCallResult::error(why),
            };
            let conv = self.kernel.get().and_then(|kernel| Some((kernel.live.get(call.conversation_id)?, kernel)));
            let Some((conv, kernel)) = conv else {
                return ToolCallResult::error(format!("`{NAME}` is called by a model during a turn"));
            };
            let done = entries.iter().filter(|e| e.completed).count();
            let total = entries.len();
            let turn = *lock(&conv.running);
            conv.emit(&kernel, Event::plan_updated(conv.id, turn, entries));
            let mut output = format!("Plan updated: {done} of {total} steps completed.");
            if let Some(explanation) = explanation {
                output.push_str(&format!(" ({})", explanation.trim()));
            }
            ToolCallResult { output, is_error: false, structured: None, details: None, images: Vec::new() }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_becomes_entries_and_a_bad_one_says_why() {
        let (entries, explanation) = entries(&json!({
            "explanation": "found the cause",
            "plan": [{"step": "read the code", "status": "completed"}, {"step": " fix it ", "status": "in_progress"}]
        }))
        .unwrap();
        assert_eq!(
            entries,
            vec![
                PlanEntry { id: "1".into(), text: "read the code".into(), completed: true },
                PlanEntry { id: "2".into(), text: "fix it".into(), completed: false },
            ]
        );
        assert_eq!(explanation.as_deref(), Some("found the cause"));
        let two_running =
            json!({"plan": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]});
        assert_eq!(super::entries(&two_running).unwrap_err(), "at most one step can be in_progress");
        assert!(
            super::entries(&json!({"plan": [{"step": "a", "status": "done"}]})).unwrap_err().starts_with("not a plan")
        );
        assert!(super::entries(&json!({"steps": []})).is_err());
        assert_eq!(
            super::entries(&json!({"plan": [{"step": " ", "status": "pending"}]})).unwrap_err(),
            "step 1 says nothing"
        );
        let def = def();
        assert!(def.turn_only && def.is_read_only());
    }
}

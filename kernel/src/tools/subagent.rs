//! The subagent tool (`subagent`): the model hands self-contained tasks to child
//! conversations with named harnesses (roles; by default the read-only planner, an explorer),
//! each working in its own context (it sees only its task) and answering once: one task's
//! final answer is the tool's result; several tasks run in parallel and the result is a
//! summary of each child's end, by the call's wait policy (`all`, `any`: the first to end,
//! `first_success`: the first to complete; the others are then cancelled).
//!
//! A child is an ordinary conversation of the same owner and workspace (its model the parent
//! harness's `subagent_model`, else the child harness's model, else the parent's), whose
//! `parent_id` is the caller's (so `session.list` shows it under its parent), in at most the
//! mode the calling turn runs in (its stored mode lowered to the turn's ceiling, then to the
//! child harness's ceiling): every call the child makes goes through the pipeline there. The
//! parent's turn publishes `subagent_started` and `subagent_finished` per child; cancelling it
//! cancels the children's turns; a child past its timeout is cancelled and ends `timed_out`.
//! The settings' `subagents` section bounds depth, parallelism and the timeout. The depth is
//! read from the store's parent chain (see [`stored_depth`]), so a kernel restarted since a
//! child was made still refuses. Like the plan tool it runs in the kernel's process and is
//! `turn_only`; its effect is `read`, since what a child does is decided call by call in the
//! child, never above the caller's mode.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::Deserialize;
use serde_json::json;
use superpi_policy::SubagentSettings;
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_proto::{Event, EventBody, Message, Role};
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::conversation::{Conversation, Input};
use crate::kernel::{Kernel, KernelSlot};
use crate::sync::lock;
use result::{ChildEnd, Reported, WaitPolicy, single_result, summary_result};
use superpi_store::{NewConversation, Store, StoreError};

/// The tool's name.
pub(crate) const NAME: &str = "subagent";

/// The most tasks one call may hand out.
const MAX_TASKS: usize = 8;

/// The longest parent chain [`stored_depth`] follows: past it the store is taken to be
/// corrupt (a loop), and the call is refused rather than followed forever.
const MAX_CHAIN: usize = 10_000;

/// The harness of a subagent when the call names none: reads and searches, changes nothing.
const DEFAULT_HARNESS: &str = "superpi-planner";

/// How long a cancelled child's turn may take to end before the call stops waiting.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// The tool's facts.
pub(crate) fn def() -> ToolDef {
    let harness =
        json!({"type": "string", "description": "The subagent's role: a harness id (default superpi-planner)"});
    ToolDef {
        name: NAME.into(),
        description: format!(
            "Hand self-contained tasks to subagents: each is a new conversation with its own context \
             that sees only the task you write (say everything it needs), works in the same workspace, \
             and answers once. One `task`: its final answer is this tool's result. Several `tasks` \
             (at most {MAX_TASKS}) run in parallel; `wait` says when to answer: `all` (default), `any` \
             (the first to end) or `first_success` (the first to complete); the others are then \
             cancelled, and the result sums up every subagent's end. Use it for searches, reviews \
             or investigations whose details would crowd your context. `harness` picks how one \
             works (default `{DEFAULT_HARNESS}`: reads and searches, changes nothing; `superpi-code` \
             can edit); it never runs in a higher mode than you. `timeout_secs` bounds each \
             subagent (default from the settings, 120)."
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "One task, with the context the subagent needs"},
                "harness": harness,
                "tasks": {
                    "type": "array",
                    "maxItems": MAX_TASKS,
                    "description": "Several tasks to run in parallel (instead of `task`)",
                    "items": {
                        "type": "object",
                        "properties": {"task": {"type": "string"}, "harness": harness},
                        "required": ["task"],
                        "additionalProperties": false
                    }
                },
                "wait": {"type": "string", "enum": ["all", "any", "first_success"]},
                "timeout_secs": {"type": "integer", "minimum": 1}
            },
            "additionalProperties": false
        }),
        effects: vec![Effect::Read],
        ui: ToolUi { kind: ToolKind::Think, title: Some("Subagent: {task}".into()), ..ToolUi::default() },
        turn_only: true,
        ..ToolDef::default()
    }
}

/// The runner: starts the children, waits for them by the call's policy, answers with their
/// results.
pub(crate) struct SubagentTool {
    pub kernel: KernelSlot,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    harness: Option<String>,
    #[serde(default)]
    tasks: Vec<ChildSpec>,
    #[serde(default)]
    wait: WaitPolicy,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

/// One child to start: its task and role.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChildSpec {
    task: String,
    #[serde(default)]
    harness: Option<String>,
}

impl Args {
    /// The children the call asks for, and whether the call used the single form (`task`),
    /// which answers with the child's answer itself rather than a summary.
    fn children(self) -> Result<(Vec<ChildSpec>, bool), String> {
        let single_form = self.task.is_some();
        let specs = match (self.task, self.tasks.is_empty()) {
            (Some(task), true) => vec![ChildSpec { task, harness: self.harness }],
            (None, false) if self.harness.is_none() => self.tasks,
            (None, false) => return Err("`harness` goes with `task`: give each of `tasks` its own".into()),
            (Some(_), false) => return Err("give either `task` or `tasks`, not both".into()),
            (None, true) => return Err("give a `task` (or several `tasks`)".into()),
        };
        if specs.len() > MAX_TASKS {
            return Err(format!("at most {MAX_TASKS} tasks in one call"));
        }
        if specs.iter().any(|c| c.task.trim().is_empty()) {
            return Err("a task says nothing".into());
        }
        Ok((specs, single_form))
    }
}

impl ToolRunner for SubagentTool {
    fn run<'a>(
        &'a self,
        call: &'a ToolCall,
        cancel: CancellationToken,
        _: Option<mpsc::Sender<String>>,
    ) -> RunFuture<'a> {
        Box::pin(async move {
            let args = match serde_json::from_value::<Args>(call.arguments.clone()) {
                Ok(args) => args,
                Err(err) => return ToolCallResult::error(format!("bad arguments: {err}")),
            };
            let parent = self.kernel.get().and_then(|kernel| Some((kernel.live.get(call.conversation_id)?, kernel)));
            let Some((parent, kernel)) = parent else {
                return ToolCallResult::error(format!("`{NAME}` is called by a model during a turn"));
            };
            match run_children(&kernel, &parent, args, &cancel).await {
                Ok(result) => result,
                Err(why) => ToolCallResult::error(why),
            }
        })
    }
}

/// A child the call may start: its task, harness, mode and model, checked before any starts.
struct Planned<'a> {
    task: &'a str,
    harness: &'a superpi_policy::Harness,
    mode: superpi_policy::Mode,
    model: String,
}

async fn run_children(
    kernel: &Arc<Kernel>,
    parent: &Arc<Conversation>,
    args: Args,
    cancel: &CancellationToken,
) -> Result<ToolCallResult, String> {
    let limits =
        superpi_policy::Settings::load(&kernel.config.config_dir, None).map(|s| s.subagents).unwrap_or_else(|err| {
            tracing::warn!("the settings could not be read, subagents keep their default limits: {err}");
            SubagentSettings::default()
        });
    let wait = args.wait;
    let timeout = args
        .timeout_secs
        .map_or(limits.timeout, |secs| Duration::from_secs(secs.max(1)).min(superpi_policy::subagents::max_timeout()));
    let (specs, single) = args.children()?;
    let depth = stored_depth(kernel.store.as_ref(), parent.id)
        .map_err(|e| format!("could not read the conversation's parents: {e}"))?
        + 1;
    if depth > limits.max_depth {
        return Err(format!(
            "a subagent {} levels down cannot start subagents (the limit is {}): do the task yourself",
            depth - 1,
            limits.max_depth
        ));
    }
    let settings = parent.settings();
    let parent_harness = kernel.catalog.harness(Some(&settings.harness)).map_err(|e| e.message)?;
    // At most the mode the calling turn runs in, then each child harness's ceiling.
    let stored = settings.mode.parse::<superpi_policy::Mode>().map_err(|e| e.to_string())?;
    let turn_ceiling = lock(&parent.turn_ceiling).unwrap_or(stored);
    let wanted = stored.min(turn_ceiling);
    // Every child is checked before any starts: a refusal leaves nothing running.
    let mut planned = Vec::with_capacity(specs.len());
    for spec in &specs {
        let harness =
            kernel.catalog.harness(Some(spec.harness.as_deref().unwrap_or(DEFAULT_HARNESS))).map_err(|e| e.message)?;
        if let Some(allowed) = &parent_harness.subagents
            && !allowed.iter().any(|id| id == &harness.id)
        {
            return Err(format!(
                "the harness `{}` may start only these subagents: {}",
                parent_harness.id,
                allowed.join(", ")
            ));
        }
        // An agent backend runs its own tools, which no limit of superpi's can bound.
        if harness.backend.is_some() {
            return Err(format!(
                "`{}` runs an agent backend's own tools, which cannot be kept within yours: pick a harness without a backend",
                harness.id
            ));
        }
        let mode = kernel.catalog.mode_for(Some(wanted.as_str()), harness, false).map_err(|e| e.message)?;
        // The parent harness's `subagent_model`, else the child harness's model, else the parent's.
        let model = [&parent_harness.cost.subagent_model, &harness.cost.models.first().cloned()]
            .into_iter()
            .find_map(Clone::clone)
            .unwrap_or_else(|| settings.model.clone());
        kernel.catalog.provider(&model).map_err(|e| e.message)?;
        planned.push(Planned { task: spec.task.trim(), harness, mode, model });
    }
    let tool_limit = parent_tools(kernel, parent, parent_harness);

    // The children run in parallel, at most `max_parallel` at once; the wait policy's end, or
    // the parent's cancel, cancels those still running (and those not started never start).
    let group = cancel.child_token();
    let places = Semaphore::new(limits.max_parallel);
    let mut running: FuturesUnordered<_> = planned
        .iter()
        .enumerate()
        .map(|(index, plan)| {
            let (group, places, tool_limit) = (&group, &places, &tool_limit);
            async move {
                let started = tokio::select! {
                    permit = places.acquire() => permit.ok(),
                    _ = group.cancelled() => None,
                };
                let report = match started {
                    Some(_permit) => run_child(kernel, parent, plan, tool_limit, group, timeout).await,
                    None => Reported {
                        child: None,
                        harness: plan.harness.id.clone(),
                        mode: plan.mode.as_str(),
                        end: ChildEnd { status: "cancelled", text: Some("not started".into()) },
                    },
                };
                (index, report)
            }
        })
        .collect();
    let mut reports: Vec<Option<Reported>> = (0..planned.len()).map(|_| None).collect();
    let mut answered_by = None;
    while let Some((index, report)) = running.next().await {
        if answered_by.is_none() && wait.satisfied_by(&report.end) {
            answered_by = Some(index);
            group.cancel();
        }
        reports[index] = Some(report);
    }
    let mut reports: Vec<Reported> = reports.into_iter().flatten().collect();
    if single && reports.len() == 1 {
        return Ok(single_result(reports.remove(0), timeout));
    }
    let tasks: Vec<&str> = planned.iter().map(|plan| plan.task).collect();
    Ok(summary_result(&tasks, &reports, wait, answered_by, timeout))
}

/// Starts one child and runs its turn to its end, its timeout or the group's cancel.
async fn run_child(
    kernel: &Arc<Kernel>,
    parent: &Arc<Conversation>,
    plan: &Planned<'_>,
    tool_limit: &[String],
    group: &CancellationToken,
    timeout: Duration,
) -> Reported {
    let report = |child, end| Reported { child, harness: plan.harness.id.clone(), mode: plan.mode.as_str(), end };
    let settings = parent.settings();
    // A scratch harness's child gets its own directory (from its id), a shared one the share.
    let workspace = match plan.harness.workspace {
        superpi_policy::WorkspaceKind::Repo => settings.workspace.clone(),
        _ => match crate::features::workspaces::stored(&kernel.config.workspaces_dir, &plan.harness.workspace) {
            Ok(workspace) => workspace,
            Err(e) => return report(None, ChildEnd { status: "error", text: Some(format!("its workspace: {e}")) }),
        },
    };
    let title: String = plan.task.chars().take(80).collect();
    let row = kernel.store.create_conversation(&NewConversation {
        owner: parent.owner.clone(),
        harness: plan.harness.id.clone(),
        model: plan.model.clone(),
        mode: plan.mode.as_str().to_string(),
        workspace,
        title: Some(title),
        parent_id: Some(parent.id),
        settings: superpi_store::ConversationSettings {
            effort: settings.effort,
            tool_limit: Some(tool_limit.to_vec()),
            ..Default::default()
        },
    });
    let failed = |why: String| ChildEnd { status: "error", text: Some(why) };
    let row = match row {
        Ok(row) => row,
        Err(e) => return report(None, failed(format!("could not store the subagent's conversation: {e}"))),
    };
    let child = match crate::live::conversation(kernel, row.id) {
        Ok(Some(child)) => child,
        Ok(None) => return report(Some(row.id), failed(format!("the subagent's conversation {} vanished", row.id))),
        Err(e) => return report(Some(row.id), failed(e.to_string())),
    };
    let parent_turn = *lock(&parent.running);
    parent.emit(kernel, Event::subagent_started(parent.id, parent_turn, child.id, plan.harness.id.as_str(), plan.task));
    let end = run_turn(kernel, &child, plan.task, plan.mode, group, timeout).await.unwrap_or_else(failed);
    parent.emit(kernel, Event::subagent_finished(parent.id, parent_turn, child.id, end.status, end.text.clone()));
    report(Some(child.id), end)
}

/// The tools the parent is offered now, within its own limit: what its subagent may use at most.
fn parent_tools(kernel: &Kernel, parent: &Conversation, parent_harness: &superpi_policy::Harness) -> Vec<String> {
    let mut names: Vec<String> = kernel.catalog.tools_for(parent_harness).into_iter().map(|t| t.name).collect();
    names.extend(lock(&parent.mcp_attached).defs().into_iter().map(|t| t.name));
    if let Ok(policy) = &*lock(&parent.policy) {
        names.retain(|name| policy.within_limit(name));
    }
    // Escalating changes the model, not what may be done: a child keeps its own cascade.
    names.push(crate::catalog::ESCALATE_TOOL.to_string());
    names.sort();
    names.dedup();
    names
}

/// Submits the task as the child's turn and waits for its end (as stored, with its status);
/// `cancel`, or `timeout` passing first (then it ends `timed_out`), cancels it.
async fn run_turn(
    kernel: &Arc<Kernel>,
    child: &Arc<Conversation>,
    task: &str,
    ceiling: superpi_policy::Mode,
    cancel: &CancellationToken,
    timeout: Duration,
) -> Result<ChildEnd, String> {
    let content = vec![superpi_proto::ContentBlock::text(task)];
    let message = Message { role: Role::User, content, usage: None, stop_reason: None };
    // Woken at each of the child's events; its end is in the store once published.
    let mut published = child.wake();
    let turn_id = kernel.store.create_turn(child.id, &message).map_err(|e| e.to_string())?;
    let submit = Input::Submit { turn_id, message: Box::new(message), ceiling };
    child.input.send(submit).await.map_err(|_| "the kernel is stopping".to_string())?;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut cancelled_at: Option<tokio::time::Instant> = None;
    let mut timed_out = false;
    loop {
        if let Some(end) = stored_end(kernel, child.id, turn_id)? {
            return Ok(match end.status {
                "cancelled" if timed_out => ChildEnd { status: "timed_out", text: None },
                _ => end,
            });
        }
        let grace = cancelled_at.map(|at| at + CANCEL_GRACE);
        let stop = tokio::select! {
            changed = published.changed() => {
                if changed.is_err() {
                    return Err("the subagent's conversation closed".into());
                }
                false
            }
            _ = cancel.cancelled(), if cancelled_at.is_none() => true,
            _ = tokio::time::sleep_until(deadline), if cancelled_at.is_none() => {
                timed_out = true;
                true
            }
            _ = sleep_until(grace), if grace.is_some() => {
                let status = if timed_out { "timed_out" } else { "cancelled" };
                return Ok(ChildEnd { status, text: None });
            }
        };
        if stop {
            let (reply, _) = oneshot::channel();
            let _ = child.input.send(Input::Cancel { reply }).await;
            cancelled_at = Some(tokio::time::Instant::now());
        }
    }
}

/// How many subagents deep a conversation is (0: a person's), from the store alone: each
/// step up its parent chain (`parent_id`) that its parent's stored `subagent_started` names
/// is a subagent's, any other (a fork records its source as its parent) keeps the depth, so a
/// fork of a subagent's conversation is as deep as that conversation.
pub(crate) fn stored_depth(store: &dyn Store, id: i64) -> Result<u32, StoreError> {
    let mut depth = 0;
    let mut child = id;
    for _ in 0..MAX_CHAIN {
        let Some(parent) = store.conversation(child)?.and_then(|row| row.parent_id) else {
            return Ok(depth);
        };
        if started_child(store, parent, child)? {
            depth += 1;
        }
        child = parent;
    }
    Err(StoreError::Corrupt(format!("conversation {id}'s parent chain is longer than {MAX_CHAIN}")))
}

/// Whether `parent`'s stored events hold the `subagent_started` of `child`.
fn started_child(store: &dyn Store, parent: i64, child: i64) -> Result<bool, StoreError> {
    let started = store.latest_events(parent, "subagent_started", usize::MAX)?;
    Ok(started.iter().any(|(_, wire)| {
        Event::from_json(wire).is_ok_and(|event| {
            matches!(event.body, EventBody::SubagentStarted { child_conversation_id, .. } if child_conversation_id == child)
        })
    }))
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A child turn's end as the store has it, once it ended: its status, and its final answer
/// (or its error).
fn stored_end(kernel: &Kernel, child: i64, turn_id: i64) -> Result<Option<ChildEnd>, String> {
    let Some((status, error)) = kernel.store.turn_outcome(turn_id).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let status = match status.as_str() {
        "completed" => "completed",
        "cancelled" => "cancelled",
        "error" | "interrupted" => "error",
        _ => return Ok(None),
    };
    let text = match status {
        "completed" => {
            let entries = kernel.store.entries(child).map_err(|e| e.to_string())?;
            let last = entries.iter().rev().find(|e| e.kind == superpi_proto::EntryKind::Assistant);
            last.map(|e| e.message.text())
        }
        _ => error,
    };
    Ok(Some(ChildEnd { status, text }))
}

#[path = "subagent_result.rs"]
mod result;

#[cfg(test)]
#[path = "subagent_tests.rs"]
mod tests;

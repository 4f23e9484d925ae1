//! The subagent tool (`subagent`): the model hands a self-contained task to a child
//! conversation with a named harness (by default the read-only planner, an explorer), which
//! works in its own context (it sees only the task) and whose final answer is the tool's
//! result.
//!
//! The child is an ordinary conversation of the same owner, workspace and model, whose
//! `parent_id` is the caller's (so `session.list` shows it under its parent), in at most the
//! mode the calling turn runs in (its stored mode lowered to the turn's ceiling, then to the
//! child harness's ceiling): every call the child makes goes through the pipeline there. The
//! parent's turn publishes `subagent_started` and `subagent_finished`; cancelling it cancels
//! the child's turn. A subagent cannot start subagents (depth [`MAX_DEPTH`]), whatever
//! happened between: its depth is read from the store's parent chain (see [`stored_depth`]),
//! so a kernel restarted since the child was made still refuses. Like the plan
//! tool it runs in the kernel's process and is `turn_only`; its effect is `read`, since what
//! the child does is decided call by call in the child, never above the caller's mode.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_proto::{Event, EventBody, Message, Role};
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::conversation::{Conversation, Input};
use crate::kernel::{Kernel, KernelSlot};
use crate::sync::lock;
use superpi_store::{NewConversation, Store, StoreError};

/// The tool's name.
pub(crate) const NAME: &str = "subagent";

/// How deep subagents go: a person's conversation starts them, they start none.
const MAX_DEPTH: u32 = 1;

/// The longest parent chain [`stored_depth`] follows: past it the store is taken to be
/// corrupt (a loop), and the call is refused rather than followed forever.
const MAX_CHAIN: usize = 10_000;

/// The harness of a subagent when the call names none: reads and searches, changes nothing.
const DEFAULT_HARNESS: &str = "superpi-planner";

/// How long a cancelled child's turn may take to end before the call stops waiting.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// The tool's facts.
pub(crate) fn def() -> ToolDef {
    ToolDef {
        name: NAME.into(),
        description: format!(
            "Hand a self-contained task to a subagent: a new conversation with its own context that \
             sees only the task you write (say everything it needs), works in the same workspace, and \
             answers once; its final answer is this tool's result. Use it for searches, reviews or \
             investigations whose details would crowd your context. `harness` picks how it works \
             (default `{DEFAULT_HARNESS}`: reads and searches, changes nothing; `superpi-code` can \
             edit); it never runs in a higher mode than you. A subagent cannot start subagents."
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "The whole task, with the context the subagent needs"},
                "harness": {"type": "string", "description": "The subagent's harness id (default superpi-planner)"}
            },
            "required": ["task"],
            "additionalProperties": false
        }),
        effects: vec![Effect::Read],
        ui: ToolUi { kind: ToolKind::Think, title: Some("Subagent: {task}".into()), ..ToolUi::default() },
        turn_only: true,
        ..ToolDef::default()
    }
}

/// The runner: starts the child, waits for its turn, answers with its result.
pub(crate) struct SubagentTool {
    pub kernel: KernelSlot,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    task: String,
    #[serde(default)]
    harness: Option<String>,
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
                Ok(args) if !args.task.trim().is_empty() => args,
                Ok(_) => return ToolCallResult::error("the task says nothing"),
                Err(err) => return ToolCallResult::error(format!("bad arguments: {err}")),
            };
            let parent = self.kernel.get().and_then(|kernel| Some((kernel.live.get(call.conversation_id)?, kernel)));
            let Some((parent, kernel)) = parent else {
                return ToolCallResult::error(format!("`{NAME}` is called by a model during a turn"));
            };
            match run_child(&kernel, &parent, &args, &cancel).await {
                Ok(result) => result,
                Err(why) => ToolCallResult::error(why),
            }
        })
    }
}

/// How a child's turn ended: its status (`completed`, `error`, `cancelled`) and its final text
/// or error.
struct ChildEnd {
    status: &'static str,
    text: Option<String>,
}

async fn run_child(
    kernel: &Arc<Kernel>,
    parent: &Arc<Conversation>,
    args: &Args,
    cancel: &CancellationToken,
) -> Result<ToolCallResult, String> {
    let depth = stored_depth(kernel.store.as_ref(), parent.id)
        .map_err(|e| format!("could not read the conversation's parents: {e}"))?
        + 1;
    if depth > MAX_DEPTH {
        return Err("a subagent cannot start subagents: do the task yourself".into());
    }
    let settings = parent.settings();
    let harness_id = args.harness.as_deref().unwrap_or(DEFAULT_HARNESS);
    let harness = kernel.catalog.harness(Some(harness_id)).map_err(|e| e.message)?;
    let parent_harness = kernel.catalog.harness(Some(&settings.harness)).map_err(|e| e.message)?;
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
    let tool_limit = parent_tools(kernel, parent, parent_harness);
    // At most the mode the calling turn runs in, then the child harness's ceiling.
    let stored = settings.mode.parse::<superpi_policy::Mode>().map_err(|e| e.to_string())?;
    let turn_ceiling = lock(&parent.turn_ceiling).unwrap_or(stored);
    let wanted = stored.min(turn_ceiling);
    let mode = kernel.catalog.mode_for(Some(wanted.as_str()), harness, false).map_err(|e| e.message)?;
    let workspace = match harness.workspace {
        superpi_policy::WorkspaceKind::None => None,
        _ => settings.workspace.clone(),
    };
    let title: String = args.task.trim().chars().take(80).collect();
    let row = kernel
        .store
        .create_conversation(&NewConversation {
            owner: parent.owner.clone(),
            harness: harness.id.clone(),
            model: settings.model.clone(),
            mode: mode.as_str().to_string(),
            workspace,
            title: Some(title),
            parent_id: Some(parent.id),
            settings: superpi_store::ConversationSettings {
                effort: settings.effort,
                tool_limit: Some(tool_limit),
                ..Default::default()
            },
        })
        .map_err(|e| format!("could not store the subagent's conversation: {e}"))?;
    let child = crate::live::conversation(kernel, row.id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the subagent's conversation {} vanished", row.id))?;

    let parent_turn = *lock(&parent.running);
    parent
        .emit(kernel, Event::subagent_started(parent.id, parent_turn, child.id, harness.id.as_str(), args.task.trim()));
    let end = run_turn(kernel, &child, args.task.trim(), mode, cancel).await;
    let end = end.unwrap_or_else(|why| ChildEnd { status: "error", text: Some(why) });
    parent.emit(kernel, Event::subagent_finished(parent.id, parent_turn, child.id, end.status, end.text.clone()));

    let details = json!({"child_conversation_id": child.id, "harness": harness.id, "mode": mode.as_str()});
    let output = match (end.status, end.text) {
        ("completed", Some(text)) if !text.trim().is_empty() => text,
        ("completed", _) => "The subagent finished without an answer.".to_string(),
        ("cancelled", _) => "The subagent was cancelled.".to_string(),
        (_, text) => format!("The subagent failed: {}", text.unwrap_or_default()),
    };
    Ok(ToolCallResult {
        is_error: end.status != "completed",
        output,
        structured: None,
        details: Some(details),
        images: Vec::new(),
    })
}

/// Submits the task as the child's turn and waits for its end (as stored, with its status);
/// cancel cancels it.
/// The tools the parent is offered now, within its own limit: what its subagent may use at most.
fn parent_tools(kernel: &Kernel, parent: &Conversation, parent_harness: &superpi_policy::Harness) -> Vec<String> {
    let mut names: Vec<String> = kernel.catalog.tools_for(parent_harness).into_iter().map(|t| t.name).collect();
    names.extend(lock(&parent.mcp_attached).defs().into_iter().map(|t| t.name));
    if let Ok(policy) = &*lock(&parent.policy) {
        names.retain(|name| policy.within_limit(name));
    }
    names.sort();
    names.dedup();
    names
}

async fn run_turn(
    kernel: &Arc<Kernel>,
    child: &Arc<Conversation>,
    task: &str,
    ceiling: superpi_policy::Mode,
    cancel: &CancellationToken,
) -> Result<ChildEnd, String> {
    let content = vec![superpi_proto::ContentBlock::text(task)];
    let message = Message { role: Role::User, content, usage: None, stop_reason: None };
    // Woken at each of the child's events; its end is in the store once published.
    let mut published = child.wake();
    let turn_id = kernel.store.create_turn(child.id, &message).map_err(|e| e.to_string())?;
    let submit = Input::Submit { turn_id, message: Box::new(message), ceiling };
    child.input.send(submit).await.map_err(|_| "the kernel is stopping".to_string())?;
    let mut cancelled_at: Option<tokio::time::Instant> = None;
    loop {
        if let Some(end) = stored_end(kernel, child.id, turn_id)? {
            return Ok(end);
        }
        let grace = cancelled_at.map(|at| at + CANCEL_GRACE);
        tokio::select! {
            changed = published.changed() => {
                if changed.is_err() {
                    return Err("the subagent's conversation closed".into());
                }
            }
            _ = cancel.cancelled(), if cancelled_at.is_none() => {
                let (reply, _) = oneshot::channel();
                let _ = child.input.send(Input::Cancel { reply }).await;
                cancelled_at = Some(tokio::time::Instant::now());
            }
            _ = sleep_until(grace), if grace.is_some() => {
                return Ok(ChildEnd { status: "cancelled", text: None });
            }
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

#[cfg(test)]
#[path = "subagent_tests.rs"]
mod tests;

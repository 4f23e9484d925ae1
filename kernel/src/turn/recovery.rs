//! History that is always valid: a turn never ends with a tool call that has no result.
//!
//! Every vendor refuses a request whose assistant tool call is not answered by a tool result
//! (OpenAI's `tool_calls` need their `tool` messages, Anthropic's `tool_use` its
//! `tool_result`, Gemini's `functionCall` its `functionResponse`). A turn that ends early
//! (cancel, a provider failure after a tool call block closed, a kernel that died while a tool
//! ran), and a fork cut between a call and its result, store an error result for each call left
//! open, as the same entry and `tool_completed`
//! event a finished call stores, so the store, `session.history`, every frontend's replay and
//! the next model request agree. So every turn's end is recorded here ([`record_end`]),
//! whichever engine ran it (the model loop in `turn.rs`, an agent backend in `backend_turn.rs`).

use serde_json::Value;
use superpi_proto::{ContentBlock, Entry, EntryKind, Event, Message, Role};

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use superpi_store::{StoreError, TurnStatus};

/// Why a turn left tool calls without results; says so in the result the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenCallEnd {
    /// A person cancelled the turn.
    Cancelled,
    /// The turn failed (the provider, the store) before the call ran.
    Failed,
    /// The kernel stopped (killed, crashed, shut down) while the call ran, or after a person
    /// allowed it: it may have run in part or in full.
    Interrupted,
    /// The kernel stopped while the call waited for a person's answer: it never ran.
    Unanswered,
    /// A fork copied the history up to a call but not its result.
    Forked,
}

impl OpenCallEnd {
    pub fn output(self) -> &'static str {
        match self {
            OpenCallEnd::Cancelled => "cancelled by the user before this tool finished",
            OpenCallEnd::Failed => "not run: the turn failed before this tool ran",
            OpenCallEnd::Interrupted => {
                "interrupted: the kernel stopped while this tool ran; it may have run in part or in full, \
                 so check what it did before running it again"
            }
            OpenCallEnd::Unanswered => "not run: the kernel stopped while this call waited for a person's answer",
            OpenCallEnd::Forked => "not run: the conversation was forked before this tool finished",
        }
    }
}

/// Which assistant messages' calls to close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Those of one turn.
    Turn(i64),
    /// Those after the last user message (a fork's copied entries carry no turn).
    Tail,
}

/// The tool calls of the scope's assistant messages that no stored tool result answers, as
/// (call id, tool name), in the order the model made them. A hole further back (left by a
/// kernel before this module) is not patched: a result appended now would not follow its call.
pub(crate) fn open_calls(entries: &[Entry], scope: Scope) -> Vec<(String, String)> {
    let answered: std::collections::HashSet<&str> = entries
        .iter()
        .flat_map(|e| &e.message.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let tail = entries.iter().rposition(|e| e.kind == EntryKind::User).map_or(0, |at| at + 1);
    entries
        .iter()
        .enumerate()
        .filter(|(at, e)| {
            e.kind == EntryKind::Assistant
                && match scope {
                    Scope::Turn(turn_id) => e.turn_id == Some(turn_id),
                    Scope::Tail => *at >= tail,
                }
        })
        .flat_map(|(_, e)| &e.message.content)
        .filter_map(|b| match b {
            ContentBlock::ToolCall { id, name, .. } if !answered.contains(id.as_str()) => {
                Some((id.clone(), name.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Stores an error result (entry and `tool_completed` event) for every call of the scope
/// left without one, saying `end(call id)`. Returns how many it stored.
pub(crate) fn close_open_calls(
    kernel: &Kernel,
    conv: &Conversation,
    scope: Scope,
    end: impl Fn(&str) -> OpenCallEnd,
) -> Result<usize, StoreError> {
    let open = open_calls(&kernel.store.entries(conv.id)?, scope);
    let turn_id = match scope {
        Scope::Turn(turn_id) => Some(turn_id),
        Scope::Tail => None,
    };
    for (call_id, name) in &open {
        let output = end(call_id).output();
        let message = Message {
            role: Role::Tool,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: call_id.clone(),
                name: name.clone(),
                output: output.to_string(),
                is_error: true,
                structured: None,
                details: None,
            }],
            usage: None,
            stop_reason: None,
        };
        let event = Event::tool_completed(conv.id, turn_id, call_id, name, true, Value::String(output.into()));
        conv.publish(kernel, event, Some((EntryKind::ToolResult, &message)))?;
    }
    Ok(open.len())
}

/// The end of a turn that did not complete: closes its open calls, logging a store failure
/// (the turn is over either way; the next start's recovery does not see it again).
fn close_after(kernel: &Kernel, conv: &Conversation, turn_id: i64, end: OpenCallEnd) {
    if let Err(err) = close_open_calls(kernel, conv, Scope::Turn(turn_id), |_| end) {
        tracing::error!("storing results for the open tool calls of turn {turn_id}: {err}");
    }
}

/// How a turn's engine (the model loop, or a backend) says the turn ended; an `Err` is a
/// failure, with its message.
pub(crate) enum TurnEnd {
    Completed { result: String, stop_reason: &'static str },
    Cancelled,
}

/// Records the end of turn `turn_id`: a turn the kernel's stop cut short ends as interrupted;
/// one that stopped early first gets results for its open calls; then its end event and status.
pub(crate) fn record_end(kernel: &Kernel, conv: &Conversation, turn_id: i64, ended: Result<TurnEnd, String>) {
    let cid = conv.id;
    if kernel.shutdown.is_cancelled() && !matches!(ended, Ok(TurnEnd::Completed { .. })) {
        // The kernel is stopping: the turn ends as interrupted, as recovery would end it.
        if let Err(err) = end_interrupted(kernel, conv, turn_id, "while it ran") {
            tracing::error!("recording the interruption of turn {turn_id}: {err}");
        }
        return;
    }
    // A turn that stops early leaves no tool call without a result.
    let open_call_end = match &ended {
        Ok(TurnEnd::Completed { .. }) => None,
        Ok(TurnEnd::Cancelled) => Some(OpenCallEnd::Cancelled),
        Err(_) => Some(OpenCallEnd::Failed),
    };
    if let Some(end) = open_call_end {
        close_after(kernel, conv, turn_id, end);
    }
    let (event, status, error) = match ended {
        Ok(TurnEnd::Completed { result, stop_reason }) => {
            (Event::turn_completed(cid, turn_id, Some(result), stop_reason), "completed", None)
        }
        Ok(TurnEnd::Cancelled) => (Event::turn_cancelled(cid, turn_id), "cancelled", None),
        Err(message) => (Event::turn_error(cid, turn_id, message.clone()), "error", Some(message)),
    };
    let status = TurnStatus { turn_id, status, error: error.as_deref() };
    if let Err(err) = conv.publish_turn(kernel, event, None, status) {
        tracing::error!("recording the end of turn {turn_id}: {err}");
    }
}

/// Ends a turn the kernel's stop interrupted (while stopping, or found by the kernel that
/// takes the conversation over): nothing of it runs again. Its questions left open are
/// withdrawn (`ui_resolved`, outcome `cancelled`), its open calls get results (a call that
/// waited for an answer never ran; any other may have: the model reads which and decides), its
/// conversation a notice, and the turn its end (`turn_error`), written with the status
/// `interrupted`, so a replay shows it finished. `when` says what the turn was doing ("while it
/// ran"). Returns how many calls it closed.
pub(crate) fn end_interrupted(
    kernel: &Kernel,
    conv: &Conversation,
    turn_id: i64,
    when: &str,
) -> Result<usize, StoreError> {
    let unanswered = unanswered_questions(kernel, conv.id, turn_id)?;
    for (request_id, _) in &unanswered {
        let outcome = serde_json::json!({"outcome": "cancelled"});
        conv.publish(kernel, Event::ui_resolved(conv.id, Some(turn_id), request_id, outcome), None)?;
    }
    let waited = |call_id: &str| unanswered.iter().any(|(_, call)| call.as_deref() == Some(call_id));
    let end = |call_id: &str| if waited(call_id) { OpenCallEnd::Unanswered } else { OpenCallEnd::Interrupted };
    let closed = close_open_calls(kernel, conv, Scope::Turn(turn_id), end)?;
    let message = format!("turn {turn_id} was interrupted: the kernel stopped {when}");
    conv.emit(kernel, Event::notice(conv.id, Some(turn_id), "warning", &message));
    let status = TurnStatus { turn_id, status: "interrupted", error: Some(&message) };
    conv.publish_turn(kernel, Event::turn_error(conv.id, turn_id, message.clone()), None, status)?;
    Ok(closed)
}

/// How many of a conversation's latest questions and answers recovery reads: more than a turn
/// can leave open (it asks one question at a time).
const QUESTIONS_READ: usize = 64;

/// The questions of turn `turn_id` that no stored `ui_resolved` answers, as (request id, the
/// tool call a permission question asked about), in the order they were asked.
fn unanswered_questions(kernel: &Kernel, cid: i64, turn_id: i64) -> Result<Vec<(String, Option<String>)>, StoreError> {
    let field = |wire: &Value, key: &str| wire.get(key).and_then(Value::as_str).map(str::to_string);
    let read = |event_type: &str| -> Result<Vec<Value>, StoreError> {
        let latest = kernel.store.latest_events(cid, event_type, QUESTIONS_READ)?;
        Ok(latest.iter().rev().filter_map(|(_, wire)| serde_json::from_str::<Value>(wire).ok()).collect())
    };
    let resolved: std::collections::HashSet<String> =
        read("ui_resolved")?.iter().filter_map(|wire| field(wire, "request_id")).collect();
    let mut asked: Vec<Value> = read("permission_request")?;
    asked.extend(read("ui_request")?);
    asked.sort_by_key(|wire| wire.get("seq").and_then(Value::as_u64));
    Ok(asked
        .iter()
        .filter(|wire| wire.get("turn_id").and_then(Value::as_i64) == Some(turn_id))
        .filter_map(|wire| Some((field(wire, "request_id")?, field(wire, "tool_call_id"))))
        .filter(|(request_id, _)| !resolved.contains(request_id))
        .collect())
}

/// A turn that never started (queued when the kernel stopped): its acknowledged prompt goes
/// into the history with the status `running`, as a started turn's does (so a kernel that dies
/// before the end below leaves a started turn, its prompt stored once), and the turn ends as
/// interrupted.
pub(crate) fn interrupt_unstarted(kernel: &Kernel, conv: &Conversation, turn_id: i64, prompt: &Message) {
    let event = Event::message_completed(conv.id, Some(turn_id), Role::User, prompt.content.clone(), None);
    let running = TurnStatus { turn_id, status: "running", error: None };
    let stored = conv
        .publish_turn(kernel, event, Some((EntryKind::User, prompt)), running)
        .and_then(|_| end_interrupted(kernel, conv, turn_id, "before it started"));
    if let Err(err) = stored {
        tracing::error!(conversation = conv.id, turn_id, "ending a turn that never started: {err}");
    }
}

/// A fork copies entries up to a seq, which may hold a call without its result (cut there, or
/// copied while the tool ran): the fork gets an error result for each.
pub(crate) fn close_forked(kernel: &Kernel, fork: &Conversation) -> Result<(), StoreError> {
    close_open_calls(kernel, fork, Scope::Tail, |_| OpenCallEnd::Forked).map(|_| ())
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;

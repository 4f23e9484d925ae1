//! History that is always valid: a turn never ends with a tool call that has no result.
//!
//! Every vendor refuses a request whose assistant tool call is not answered by a tool result
//! (OpenAI's `tool_calls` need their `tool` messages, Anthropic's `tool_use` its
//! `tool_result`, Gemini's `functionCall` its `functionResponse`). A turn that ends early
//! (cancel, a provider failure after a tool call block closed, a kernel that died while a tool
//! ran) stores an error result for each call left open, as the same entry and `tool_completed`
//! event a finished call stores, so the store, `session.history`, every frontend's replay and
//! the next model request agree.

use std::sync::Arc;

use serde_json::Value;
use superpi_proto::{ContentBlock, Entry, EntryKind, Event, Message, Role};

use crate::conversation::{self, Conversation};
use crate::kernel::Kernel;
use crate::store::StoreError;

/// Why a turn left tool calls without results; says so in the result the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenCallEnd {
    /// A person cancelled the turn.
    Cancelled,
    /// The turn failed (the provider, the store) before the call ran.
    Failed,
    /// The kernel stopped (killed, crashed, shut down) while the turn ran.
    Interrupted,
}

impl OpenCallEnd {
    pub fn output(self) -> &'static str {
        match self {
            OpenCallEnd::Cancelled => "cancelled by the user before this tool finished",
            OpenCallEnd::Failed => "not run: the turn failed before this tool ran",
            OpenCallEnd::Interrupted => "interrupted: the kernel stopped before this tool finished",
        }
    }
}

/// The tool calls of `turn_id`'s assistant messages that no stored tool result answers, as
/// (call id, tool name), in the order the model made them.
pub(crate) fn open_calls(entries: &[Entry], turn_id: i64) -> Vec<(String, String)> {
    let answered: std::collections::HashSet<&str> = entries
        .iter()
        .flat_map(|e| &e.message.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    entries
        .iter()
        .filter(|e| e.kind == EntryKind::Assistant && e.turn_id == Some(turn_id))
        .flat_map(|e| &e.message.content)
        .filter_map(|b| match b {
            ContentBlock::ToolCall { id, name, .. } if !answered.contains(id.as_str()) => {
                Some((id.clone(), name.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Stores an error result (entry and `tool_completed` event) for every call of `turn_id`
/// left without one. Returns how many it stored.
pub(crate) fn close_open_calls(
    kernel: &Kernel,
    conv: &Conversation,
    turn_id: i64,
    end: OpenCallEnd,
) -> Result<usize, StoreError> {
    let open = open_calls(&kernel.store.entries(conv.id)?, turn_id);
    for (call_id, name) in &open {
        let output = end.output();
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
        let event = Event::tool_completed(conv.id, Some(turn_id), call_id, name, true, Value::String(output.into()));
        conv.publish(kernel, event, Some((EntryKind::ToolResult, &message)))?;
    }
    Ok(open.len())
}

/// The end of a turn that did not complete: closes its open calls, logging a store failure
/// (the turn is over either way; the next start's recovery does not see it again).
pub(crate) fn close_after(kernel: &Kernel, conv: &Conversation, turn_id: i64, end: OpenCallEnd) {
    if let Err(err) = close_open_calls(kernel, conv, turn_id, end) {
        tracing::error!("storing results for the open tool calls of turn {turn_id}: {err}");
    }
}

/// At start, before the socket is bound: every turn a dead kernel left running or queued is
/// marked interrupted; its open calls get results, its conversation a notice, and the turn its
/// end (`turn_error`), so a replay shows it finished.
pub(crate) fn recover_interrupted(kernel: &Arc<Kernel>) -> Result<(), StoreError> {
    for (conversation_id, turn_id) in kernel.store.recover_interrupted()? {
        let conv = match conversation::live(kernel, conversation_id) {
            Ok(Some(conv)) => conv,
            Ok(None) => continue,
            Err(err) => {
                tracing::error!("recovering conversation {conversation_id}: {err}");
                continue;
            }
        };
        let closed = close_open_calls(kernel, &conv, turn_id, OpenCallEnd::Interrupted)?;
        let message = format!("turn {turn_id} was interrupted: the kernel stopped while it ran");
        conv.emit(kernel, Event::notice(conversation_id, Some(turn_id), "warning", &message));
        conv.emit(kernel, Event::turn_error(conversation_id, turn_id, message));
        tracing::info!(conversation_id, turn_id, closed, "recovered an interrupted turn");
    }
    Ok(())
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;

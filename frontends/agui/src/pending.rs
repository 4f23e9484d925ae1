//! The client-tool calls a run ended on, until a later run brings their results: by principal
//! and tool call id, the kernel's question and where its turn stood. Kept in this process
//! only: after a restart a result finds no call (404), and the kernel's timeout refuses it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use superpi_client::sync::lock;
use superpi_proto::{Event, EventBody};

use crate::render::CLIENT_TOOL;

/// More calls than this waiting means answers that never came: the oldest half is dropped
/// (the kernel has timed those out long since).
const MAX_WAITING: usize = 4096;

/// A call of a client tool that waits for its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub request_id: String,
    pub turn_id: i64,
    /// The seq of its question: the run that answers follows the turn from there.
    pub seq: u64,
}

/// A call by its principal and tool call id.
type Key = (String, String);

/// The calls that wait (each with the order it came in), shared by every request.
#[derive(Debug, Clone, Default)]
pub struct ClientCalls(Arc<Mutex<HashMap<Key, (u64, Waiting)>>>);

impl ClientCalls {
    /// Notes the call a kernel event asks a client to run (a `ui_request` of kind
    /// `client_tool`); other events are not calls.
    pub fn note(&self, principal: &str, event: &Event) {
        let EventBody::UiRequest { request_id, request } = &event.body else { return };
        if request.get("kind").and_then(Value::as_str) != Some(CLIENT_TOOL) {
            return;
        }
        let (Some(call), Some(turn_id)) = (request.get("tool_call_id").and_then(Value::as_str), event.turn_id) else {
            return;
        };
        let mut calls = lock(&self.0);
        if calls.len() >= MAX_WAITING {
            let mut ages: Vec<u64> = calls.values().map(|(age, _)| *age).collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            calls.retain(|_, (age, _)| *age > cut);
        }
        let age = calls.values().map(|(age, _)| *age + 1).max().unwrap_or(0);
        let waiting = Waiting { request_id: request_id.clone(), turn_id, seq: event.seq };
        calls.insert((principal.to_string(), call.to_string()), (age, waiting));
    }

    /// The call `tool_call_id` of `principal`, no longer waiting once taken.
    pub fn take(&self, principal: &str, tool_call_id: &str) -> Option<Waiting> {
        lock(&self.0).remove(&(principal.to_string(), tool_call_id.to_string())).map(|(_, waiting)| waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(call: &str, kind: &str) -> Event {
        let map = json!({"kind": kind, "tool_call_id": call}).as_object().cloned().unwrap_or_default();
        let mut event = Event::ui_request(7, Some(3), format!("ui-{call}"), map);
        event.seq = 40;
        event
    }

    #[test]
    fn a_client_tools_call_waits_for_its_principal_once() {
        let calls = ClientCalls::default();
        calls.note("alice", &request("c1", CLIENT_TOOL));
        calls.note("alice", &request("c2", "read_text_file"));
        assert_eq!(calls.take("bob", "c1"), None);
        assert_eq!(calls.take("alice", "c1"), Some(Waiting { request_id: "ui-c1".into(), turn_id: 3, seq: 40 }));
        assert_eq!(calls.take("alice", "c1"), None);
        assert_eq!(calls.take("alice", "c2"), None);
    }
}

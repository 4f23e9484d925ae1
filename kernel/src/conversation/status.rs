//! What a conversation's actor is doing, as its watchers are told (`state_changed`): `idle`
//! (no turn or compaction runs), `running` (a turn runs), `waiting` (the running turn waits
//! for a person or a client: a permission question, a `ui_request`), `compacting` (its context
//! is summarised, between turns or inside one). Each change is one stored event, published
//! only when the state changes, so a watcher replaying the store learns the state as it stands.

use std::sync::Mutex;

use superpi_proto::{Event, EventBody};

use super::{Conversation, EventStore};
use crate::sync::lock;

pub(crate) const IDLE: &str = "idle";
pub(crate) const RUNNING: &str = "running";
pub(crate) const WAITING: &str = "waiting";
pub(crate) const COMPACTING: &str = "compacting";

/// The latest events a load reads for the state last told, and their most bytes.
const RECALL_EVENTS: usize = 256;
const RECALL_BYTES: usize = 4 * 1024 * 1024;

/// The state last told, and the questions open in the running turn.
#[derive(Debug)]
pub(crate) struct Status {
    told: Mutex<(String, usize)>,
}

impl Default for Status {
    fn default() -> Self {
        Status { told: Mutex::new((IDLE.to_string(), 0)) }
    }
}

impl Conversation {
    /// Takes the state last stored as told (a kernel that died mid-turn left `running`: the
    /// actor then says `idle` once it has nothing to run). Only the conversation's latest
    /// [`RECALL_EVENTS`] events are read (a load must not read a long history): a state told
    /// before them is taken as `idle`.
    pub fn recall_status(&self, store: &impl EventStore) {
        let head = self.head_seq();
        let after = head.saturating_sub(RECALL_EVENTS as u64);
        let tail = store.event_store().events_page(self.id, after, head, RECALL_EVENTS, RECALL_BYTES);
        let stored =
            tail.ok().unwrap_or_default().iter().rev().find_map(|(_, json)| match Event::from_json(json).ok()?.body {
                EventBody::StateChanged { status } => Some(status),
                _ => None,
            });
        if let Some(status) = stored {
            lock(&self.status.told).0 = status;
        }
    }

    /// Tells the watchers the actor's state, when it changed.
    pub fn set_status(&self, store: &impl EventStore, turn: Option<i64>, status: &str) {
        let mut told = lock(&self.status.told);
        if told.0 == status {
            return;
        }
        told.0 = status.to_string();
        if status != WAITING {
            told.1 = 0;
        }
        // Under the lock: two changes reach the store in the order they were made.
        if let Err(err) = self.publish(store, Event::state_changed(self.id, turn, status), None) {
            tracing::debug!(conversation = self.id, "the state `{status}` was not stored: {err}");
        }
    }

    /// A question of the running turn opened: the turn waits.
    pub fn question_opened(&self, store: &impl EventStore, turn: i64) {
        lock(&self.status.told).1 += 1;
        self.set_status(store, Some(turn), WAITING);
    }

    /// A question of the running turn closed: once none is open, it runs again.
    pub fn question_closed(&self, store: &impl EventStore, turn: i64) {
        let open = {
            let mut told = lock(&self.status.told);
            told.1 = told.1.saturating_sub(1);
            told.1
        };
        if open == 0 && self.is_running() {
            self.set_status(store, Some(turn), RUNNING);
        }
    }
}

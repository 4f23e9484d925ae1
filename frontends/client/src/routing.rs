//! Where the reader task sends event frames: one channel per live subscription, and a
//! bounded hold for frames that arrive before their watch's answer reached the caller.

use std::collections::{HashMap, HashSet};

use superpi_proto::Event;
use tokio::sync::mpsc;

/// What a subscription receives.
pub(crate) enum SubMessage {
    Events(Vec<Event>),
    Lagged(u64),
}

pub(crate) type SubReceiver = mpsc::UnboundedReceiver<SubMessage>;

/// Where event frames go: live subscriptions, and frames that arrived before their watch's
/// answer was handed to the caller.
#[derive(Default)]
pub(crate) struct SubTable {
    live: HashMap<u64, mpsc::UnboundedSender<SubMessage>>,
    early: HashMap<u64, Vec<SubMessage>>,
    /// Subscriptions ended before they were registered: they get what they held, then end.
    ended_early: HashSet<u64>,
}

/// Frames kept for subscriptions not yet registered (bounded: a stray id cannot grow it).
const EARLY_LIMIT: usize = 4096;

impl SubTable {
    pub(crate) fn register(&mut self, id: u64) -> SubReceiver {
        let (tx, rx) = mpsc::unbounded_channel();
        for message in self.early.remove(&id).unwrap_or_default() {
            let _ = tx.send(message);
        }
        // Ended already: the sender goes now, so the receiver ends after what it holds.
        if !self.ended_early.remove(&id) {
            self.live.insert(id, tx);
        }
        rx
    }

    pub(crate) fn remove(&mut self, id: u64) {
        self.live.remove(&id);
        self.early.remove(&id);
        self.ended_early.remove(&id);
    }

    /// Ends a subscription from the kernel's side: it gets what it was sent before, then
    /// nothing more, whether or not its watch's caller has registered it yet.
    pub(crate) fn end(&mut self, id: u64) {
        if self.live.remove(&id).is_none() && self.ended_early.len() < EARLY_LIMIT {
            self.ended_early.insert(id);
        }
    }

    pub(crate) fn route(&mut self, id: u64, message: SubMessage) {
        match self.live.get(&id) {
            Some(tx) => {
                let _ = tx.send(message);
            }
            // What follows an end would come after a gap: dropped.
            None if self.ended_early.contains(&id) => {}
            None => {
                let held: usize = self.early.values().map(Vec::len).sum();
                if held < EARLY_LIMIT {
                    self.early.entry(id).or_default().push(message);
                }
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        self.live.clear();
        self.early.clear();
        self.ended_early.clear();
    }
}

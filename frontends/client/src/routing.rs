//! Where the reader task sends event frames: one channel per live subscription, and a
//! bounded hold for frames that arrive before their watch's answer reached the caller.

use std::collections::HashMap;

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
}

/// Frames kept for subscriptions not yet registered (bounded: a stray id cannot grow it).
const EARLY_LIMIT: usize = 4096;

impl SubTable {
    pub(crate) fn register(&mut self, id: u64) -> SubReceiver {
        let (tx, rx) = mpsc::unbounded_channel();
        for message in self.early.remove(&id).unwrap_or_default() {
            let _ = tx.send(message);
        }
        self.live.insert(id, tx);
        rx
    }

    pub(crate) fn remove(&mut self, id: u64) {
        self.live.remove(&id);
        self.early.remove(&id);
    }

    pub(crate) fn route(&mut self, id: u64, message: SubMessage) {
        match self.live.get(&id) {
            Some(tx) => {
                let _ = tx.send(message);
            }
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
    }
}

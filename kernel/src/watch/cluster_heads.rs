//! The heads of conversations this kernel watches but does not run (another kernel on the same
//! database holds their leases), as heard through the store's notices: each wakes this
//! kernel's watchers of it, which then read the new events from the store; and the deltas their
//! kernel tells, handed to those watchers as heard.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, watch};

use crate::sync::lock;
use superpi_store::LiveBatch;

/// Batches of deltas a watcher here may fall behind by before it misses some.
const LIVE_BACKLOG: usize = 256;

struct Head {
    committed: watch::Sender<u64>,
    live: broadcast::Sender<Arc<LiveBatch>>,
}

impl Head {
    fn unwatched(&self) -> bool {
        self.committed.receiver_count() == 0 && self.live.receiver_count() == 0
    }
}

#[derive(Default)]
pub(crate) struct StoredHeads {
    heads: Mutex<HashMap<i64, Head>>,
}

/// What a watcher here hears of a conversation another kernel runs.
pub(crate) struct Heard {
    /// Wakes when an event of it is committed (by any kernel).
    pub committed: watch::Receiver<u64>,
    /// Its deltas, as its kernel tells them.
    pub live: broadcast::Receiver<Arc<LiveBatch>>,
}

impl StoredHeads {
    /// What a new watcher of the conversation hears from now on.
    pub fn watch(&self, conversation_id: i64) -> Heard {
        let mut heads = lock(&self.heads);
        let head = heads
            .entry(conversation_id)
            .or_insert_with(|| Head { committed: watch::Sender::new(0), live: broadcast::Sender::new(LIVE_BACKLOG) });
        Heard { committed: head.committed.subscribe(), live: head.live.subscribe() }
    }

    /// An event was committed: its watchers here wake. Nobody watching, it is forgotten.
    pub fn committed(&self, conversation_id: i64, seq: u64) {
        let mut heads = lock(&self.heads);
        if let Some(head) = heads.get(&conversation_id) {
            if head.unwatched() {
                heads.remove(&conversation_id);
            } else {
                head.committed.send_modify(|h| *h = (*h).max(seq));
            }
        }
    }

    /// Deltas were told: its watchers here get them (nobody watching, they are dropped).
    pub fn live(&self, batch: Arc<LiveBatch>) {
        if let Some(head) = lock(&self.heads).get(&batch.conversation_id) {
            let _ = head.live.send(batch);
        }
    }

    /// Notices may have been lost: every watcher looks at the store again.
    pub fn wake_all(&self) {
        let mut heads = lock(&self.heads);
        heads.retain(|_, head| !head.unwatched());
        for head in heads.values() {
            head.committed.send_modify(|_| {});
        }
    }
}

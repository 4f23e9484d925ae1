//! The heads of conversations this kernel watches but does not run (another kernel on the same
//! database holds their leases), as heard through the store's notices: each wakes this
//! kernel's watchers of it, which then read the new events from the store.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

use crate::sync::lock;

#[derive(Default)]
pub(crate) struct StoredHeads {
    heads: Mutex<HashMap<i64, watch::Sender<u64>>>,
}

impl StoredHeads {
    /// A receiver that wakes when an event of the conversation is committed (by any kernel).
    pub fn watch(&self, conversation_id: i64) -> watch::Receiver<u64> {
        lock(&self.heads).entry(conversation_id).or_insert_with(|| watch::Sender::new(0)).subscribe()
    }

    /// An event was committed: its watchers here wake. Nobody watching, it is forgotten.
    pub fn committed(&self, conversation_id: i64, seq: u64) {
        let mut heads = lock(&self.heads);
        if let Some(head) = heads.get(&conversation_id) {
            if head.receiver_count() == 0 {
                heads.remove(&conversation_id);
            } else {
                head.send_modify(|h| *h = (*h).max(seq));
            }
        }
    }

    /// Notices may have been lost: every watcher looks at the store again.
    pub fn wake_all(&self) {
        let mut heads = lock(&self.heads);
        heads.retain(|_, head| head.receiver_count() > 0);
        for head in heads.values() {
            head.send_modify(|_| {});
        }
    }
}

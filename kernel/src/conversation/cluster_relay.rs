//! A conversation's deltas for the watchers other kernels have of it (they would otherwise see
//! only committed events). While the store says such watchers exist (`watched`), each delta
//! the conversation publishes waits here, bounded, until the kernel's relay task tells the
//! store (`cluster.rs`), or until the next committed event, which takes the waiting ones with
//! it. Both send under `sending`, so the deltas reach the database in seq order and before the
//! event that follows them. On a store only this kernel uses nobody watches elsewhere and this
//! stays empty.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::sync::lock;

/// Deltas waiting for a conversation beyond this many bytes are dropped (the watchers elsewhere
/// then miss some: the completed messages still reach them).
const MOST_WAITING: usize = 1024 * 1024;

#[derive(Default)]
pub(crate) struct DeltaRelay {
    watched: AtomicBool,
    /// Held through a look at the store's watcher counts and the `watched` it sets.
    looking: Mutex<()>,
    waiting: Mutex<Waiting>,
    /// Held while waiting deltas are told to the store (with a commit, or alone).
    sending: Mutex<()>,
}

#[derive(Default)]
struct Waiting {
    events: Vec<(u64, String)>,
    bytes: usize,
    dropped: u64,
}

impl DeltaRelay {
    /// Whether frontends on other kernels watch the conversation (as the store said last).
    pub fn watched(&self) -> bool {
        self.watched.load(Ordering::Relaxed)
    }

    /// Sets `watched` from a look at the watchers, one look at a time: looks triggered by
    /// notices run on threads of their own, and one that read the counts before a watcher was
    /// said must not overwrite what a later look (a turn's start) read.
    pub fn refresh(&self, look: impl FnOnce() -> bool) {
        let _looking = lock(&self.looking);
        self.watched.store(look(), Ordering::Relaxed);
    }

    /// Keeps a delta for the watchers elsewhere: true when it is the first waiting (the relay
    /// task is to be told).
    pub fn keep(&self, seq: u64, json: &str) -> bool {
        let mut waiting = lock(&self.waiting);
        if waiting.bytes + json.len() > MOST_WAITING {
            waiting.dropped += 1;
            return false;
        }
        waiting.bytes += json.len();
        waiting.events.push((seq, json.to_string()));
        waiting.events.len() == 1
    }

    /// The lock a sender holds from taking the waiting deltas until the store has them; `None`
    /// when nobody elsewhere watches and nothing waits (a commit then needs no order with them).
    pub fn sending(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        (self.watched() || !lock(&self.waiting).events.is_empty()).then(|| lock(&self.sending))
    }

    /// Takes the waiting deltas (under `sending`).
    pub fn take(&self, _sending: &std::sync::MutexGuard<'_, ()>) -> Vec<(u64, String)> {
        let mut waiting = lock(&self.waiting);
        if waiting.dropped > 0 {
            tracing::warn!(
                dropped = waiting.dropped,
                "deltas for watchers on other kernels were dropped: the database fell behind"
            );
            waiting.dropped = 0;
        }
        waiting.bytes = 0;
        std::mem::take(&mut waiting.events)
    }
}

/// The conversations with deltas waiting for the relay task, each once.
#[derive(Default)]
pub(crate) struct RelayQueue {
    queued: Mutex<HashSet<i64>>,
    wake: tokio::sync::Notify,
}

impl RelayQueue {
    pub fn push(&self, conversation_id: i64) {
        if lock(&self.queued).insert(conversation_id) {
            self.wake.notify_one();
        }
    }

    /// The conversations queued since the last call, waiting for one when there are none.
    pub async fn next(&self) -> Vec<i64> {
        loop {
            let queued: Vec<i64> = lock(&self.queued).drain().collect();
            if !queued.is_empty() {
                return queued;
            }
            self.wake.notified().await;
        }
    }
}

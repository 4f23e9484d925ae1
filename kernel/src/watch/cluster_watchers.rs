//! This kernel's frontends that watch conversations another kernel runs, as told to that kernel
//! through the store: it sends them its deltas, and asks those that watch interactively (they
//! answer permission questions) or read files (editors) as it asks its own watchers. The counts
//! are said when they change and renewed with the leases, so those of a kernel that died expire.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use superpi_store::{Store, Watchers};

pub(crate) struct RemoteWatchers {
    store: Arc<dyn Store>,
    kernel: String,
    ttl_ms: i64,
    counts: Mutex<HashMap<i64, Watchers>>,
    /// One write at a time, each of the counts as they are then: the last write says the last
    /// counts, whatever order the changes' writes ran in.
    writing: Mutex<()>,
}

impl RemoteWatchers {
    pub fn new(store: Arc<dyn Store>, kernel: String, ttl_ms: i64) -> Arc<RemoteWatchers> {
        Arc::new(RemoteWatchers { store, kernel, ttl_ms, counts: Mutex::default(), writing: Mutex::default() })
    }

    /// Counts a watcher of a conversation run elsewhere, said in the store before this returns
    /// (a question asked, or a turn started, right after its watch is answered already sees it),
    /// for as long as the guard lives.
    pub fn count(self: &Arc<Self>, conversation_id: i64, interactive: bool, reads_files: bool) -> Counted {
        let change = Watchers { watching: 1, interactive: u32::from(interactive), readers: u32::from(reads_files) };
        {
            let mut counts = lock(&self.counts);
            let now = counts.entry(conversation_id).or_default();
            now.watching += change.watching;
            now.interactive += change.interactive;
            now.readers += change.readers;
        }
        self.write(conversation_id);
        Counted { watchers: self.clone(), conversation_id, change }
    }

    /// This kernel's watchers of a conversation that follow it through the store (they began to
    /// watch while another kernel ran it; this one may run it now).
    pub fn here(&self, conversation_id: i64) -> Watchers {
        lock(&self.counts).get(&conversation_id).copied().unwrap_or_default()
    }

    /// Says the conversation's counts as they are now.
    fn write(&self, conversation_id: i64) {
        let _writing = lock(&self.writing);
        let now = lock(&self.counts).get(&conversation_id).copied().unwrap_or_default();
        if let Err(err) = self.store.set_watchers(conversation_id, &self.kernel, now, self.ttl_ms) {
            tracing::warn!(conversation = conversation_id, "telling the store of this kernel's watchers: {err}");
        }
    }

    /// Extends what this kernel said of its watchers (with its leases).
    pub fn renew(&self) {
        if lock(&self.counts).is_empty() {
            return;
        }
        if let Err(err) = self.store.renew_watchers(&self.kernel, self.ttl_ms) {
            tracing::warn!("renewing what this kernel said of its watchers: {err}");
        }
    }
}

/// A watcher counted in [`RemoteWatchers`]; dropped, it is uncounted (said in the background).
pub(crate) struct Counted {
    watchers: Arc<RemoteWatchers>,
    conversation_id: i64,
    change: Watchers,
}

impl Drop for Counted {
    fn drop(&mut self) {
        {
            let mut counts = lock(&self.watchers.counts);
            if let Some(now) = counts.get_mut(&self.conversation_id) {
                now.watching = now.watching.saturating_sub(self.change.watching);
                now.interactive = now.interactive.saturating_sub(self.change.interactive);
                now.readers = now.readers.saturating_sub(self.change.readers);
                if now.is_empty() {
                    counts.remove(&self.conversation_id);
                }
            }
        }
        let (watchers, id) = (self.watchers.clone(), self.conversation_id);
        // A drop may run inside a task: the store's call waits, so it runs on a thread of its own.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || watchers.write(id))),
            Err(_) => watchers.write(id),
        }
    }
}

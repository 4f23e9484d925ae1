//! Path locks: write and edit calls to one path run one at a time, across conversations and
//! `tool.call`s. In memory only; not the kernel's lock file (`kernel.lock`, see server.rs).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::sync::lock;

#[derive(Default)]
pub(crate) struct PathLocks {
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

impl PathLocks {
    /// Holds the write lock of `path` until the guard drops.
    pub async fn lock_path(&self, path: PathBuf) -> PathGuard<'_> {
        let mutex = lock(&self.locks).entry(path.clone()).or_default().clone();
        let guard = mutex.clone().lock_owned().await;
        PathGuard { locks: self, path, mutex, _guard: guard }
    }
}

/// A held path lock; the map entry goes away with its last holder.
pub(crate) struct PathGuard<'a> {
    locks: &'a PathLocks,
    path: PathBuf,
    mutex: Arc<tokio::sync::Mutex<()>>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Drop for PathGuard<'_> {
    fn drop(&mut self) {
        let mut locks = lock(&self.locks.locks);
        // Ours, the map's and the guard's own reference: nobody else waits.
        if Arc::strong_count(&self.mutex) <= 3 {
            locks.remove(&self.path);
        }
    }
}

//! The kernel's shared state.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use superpi_sandbox::Sandbox;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::config::KernelConfig;
use crate::conversation::Conversation;
use crate::mcp_client::McpClients;
use crate::store::Store;
use crate::tools::Catalog;

/// A question waiting for a person's answer.
pub(crate) struct PendingQuestion {
    pub conversation_id: i64,
    pub owner: String,
    pub options: Vec<String>,
    pub answer: oneshot::Sender<String>,
}

/// A `ui_request` waiting for a frontend's answer.
pub(crate) struct PendingUi {
    pub owner: String,
    pub answer: oneshot::Sender<serde_json::Value>,
}

/// State shared by every connection and conversation of one kernel.
pub(crate) struct Kernel {
    pub config: KernelConfig,
    pub store: Store,
    pub sandbox: Sandbox,
    pub catalog: Catalog,
    /// External MCP servers, started on first need.
    pub mcp: McpClients,
    pub live: Mutex<HashMap<i64, Arc<Conversation>>>,
    pub questions: Mutex<HashMap<String, PendingQuestion>>,
    pub ui_requests: Mutex<HashMap<String, PendingUi>>,
    /// Write and edit calls to one path run one at a time, across conversations.
    path_locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    /// Running `tool.call`s that gave a call id, by (principal, call id).
    pub direct_calls: Mutex<HashMap<(String, String), CancellationToken>>,
    pub clients: AtomicU64,
    pub running_turns: AtomicU64,
    next_subscription: AtomicU64,
    next_request: AtomicU64,
    pub started: Instant,
    pub last_activity: Mutex<Instant>,
    pub shutdown: CancellationToken,
}

impl Kernel {
    pub fn new(config: KernelConfig, store: Store, sandbox: Sandbox, catalog: Catalog) -> Arc<Kernel> {
        Arc::new(Kernel {
            config,
            store,
            mcp: McpClients::new(sandbox.clone()),
            sandbox,
            catalog,
            live: Mutex::new(HashMap::new()),
            questions: Mutex::new(HashMap::new()),
            ui_requests: Mutex::new(HashMap::new()),
            path_locks: Mutex::new(HashMap::new()),
            direct_calls: Mutex::new(HashMap::new()),
            clients: AtomicU64::new(0),
            running_turns: AtomicU64::new(0),
            next_subscription: AtomicU64::new(1),
            next_request: AtomicU64::new(1),
            started: Instant::now(),
            last_activity: Mutex::new(Instant::now()),
            shutdown: CancellationToken::new(),
        })
    }

    pub fn next_subscription_id(&self) -> u64 {
        self.next_subscription.fetch_add(1, Ordering::Relaxed)
    }

    pub fn next_request_id(&self) -> String {
        format!("perm-{}-{}", std::process::id(), self.next_request.fetch_add(1, Ordering::Relaxed))
    }

    /// Holds the write lock of `path` until the guard drops.
    pub async fn lock_path(&self, path: PathBuf) -> PathGuard<'_> {
        let mutex = lock(&self.path_locks).entry(path.clone()).or_default().clone();
        let guard = mutex.clone().lock_owned().await;
        PathGuard { kernel: self, path, mutex, _guard: guard }
    }

    pub fn touch(&self) {
        *lock(&self.last_activity) = Instant::now();
    }

    pub fn idle_for(&self) -> Option<Duration> {
        if self.clients.load(Ordering::Relaxed) > 0 || self.running_turns.load(Ordering::Relaxed) > 0 {
            return None;
        }
        Some(lock(&self.last_activity).elapsed())
    }
}

/// Locks a std mutex, recovering from poisoning (a panicked holder left plain data behind).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A held path lock; the map entry goes away with its last holder.
pub(crate) struct PathGuard<'a> {
    kernel: &'a Kernel,
    path: PathBuf,
    mutex: Arc<tokio::sync::Mutex<()>>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Drop for PathGuard<'_> {
    fn drop(&mut self) {
        let mut locks = lock(&self.kernel.path_locks);
        // Ours, the map's and the guard's own reference: nobody else waits.
        if Arc::strong_count(&self.mutex) <= 3 {
            locks.remove(&self.path);
        }
    }
}

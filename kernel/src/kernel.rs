//! The kernel: what every connection and conversation shares, composed of parts that each do
//! one job (the store, the catalogue, the live conversations, the open questions, the path
//! locks, the running direct calls, the activity clock). A part never names the kernel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use superpi_sandbox::Sandbox;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::activity::Activity;
use crate::catalog::Catalog;
use crate::config::KernelConfig;
use crate::conversation::cluster_relay::RelayQueue;
use crate::conversation::images::ImageStore;
use crate::conversation::questions::Questions;
use crate::conversation::{EventStore, LiveConversations};
use crate::features::snapshots::Snapshots;
use crate::freed::FreedMemory;
use crate::path_locks::PathLocks;
use crate::running_calls::RunningCalls;
use crate::telemetry::Telemetry;
use crate::watch::cluster_heads::StoredHeads;
use crate::watch::cluster_watchers::RemoteWatchers;
use superpi_mcp_client::McpClients;
use superpi_store::Store;

/// State shared by every connection and conversation of one kernel.
pub(crate) struct Kernel {
    /// This kernel's id in the store's leases: unique per start, across machines.
    pub id: String,
    pub config: KernelConfig,
    pub store: Arc<dyn Store>,
    pub sandbox: Sandbox,
    /// Harnesses, modes, models, settings and the tool registry.
    pub catalog: Catalog,
    /// External MCP servers, started on first need.
    pub mcp: McpClients,
    /// The MCP logins turns are running, one per server.
    pub mcp_logins: crate::mcp_logins::Logins,
    pub live: LiveConversations,
    /// Trims the allocator once conversations have left memory.
    pub freed: FreedMemory,
    /// Conversations are loaded (and their leases claimed) one at a time per stripe.
    pub loads: [std::sync::Mutex<()>; 16],
    /// The heads of conversations other kernels run, as heard through the store.
    pub stored_heads: StoredHeads,
    /// This kernel's watchers of conversations other kernels run, as told to them.
    pub remote_watchers: Arc<RemoteWatchers>,
    /// Conversations run here with deltas for watchers on other kernels (`relay.rs`).
    pub relay_queue: RelayQueue,
    /// Turns each time another kernel answered a job (`forwarded_jobs.rs`): its waiters look.
    pub job_answers: tokio::sync::watch::Sender<u64>,
    pub questions: Questions,
    /// Write and edit calls to one path run one at a time, across conversations.
    pub path_locks: PathLocks,
    /// The images of prompts, by digest in the store.
    pub images: ImageStore,
    /// Running `tool.call`s that gave a call id, for `tool.cancel`.
    pub direct_calls: RunningCalls,
    pub activity: Activity,
    /// What the turn loop and the pipeline count and trace (`kernel.metrics`, OTLP).
    pub telemetry: Telemetry,
    /// The workspaces' checkpoint repositories (`checkpoint.rs`).
    pub snapshots: Snapshots,
    /// A schedule was added here: the scheduler looks at the store again (`scheduler.rs`).
    pub schedules_changed: tokio::sync::Notify,
    /// Each webhook trigger's allowance of deliveries (`scheduler::fire`).
    pub trigger_limits: crate::features::schedule::DeliveryLimits,
    next_subscription: AtomicU64,
    /// A stop was asked for: no more clients, running turns end as interrupted.
    pub shutdown: CancellationToken,
    /// Turns have ended (or the drain gave up on them): connections flush and close.
    pub closing: CancellationToken,
    /// Conversation actors and their turns, which a stop waits for.
    pub tasks: TaskTracker,
    /// Client connections, which a stop waits for once `closing` has fired.
    pub connections: TaskTracker,
}

impl Kernel {
    pub fn new(config: KernelConfig, store: Arc<dyn Store>, sandbox: Sandbox, catalog: Catalog) -> Arc<Kernel> {
        let id = kernel_id();
        Arc::new(Kernel {
            remote_watchers: RemoteWatchers::new(store.clone(), id.clone(), config.lease_ms()),
            id,
            images: ImageStore::new(store.clone()),
            snapshots: Snapshots::new(&config.data_dir),
            config,
            store,
            mcp: McpClients::new(sandbox.clone()),
            mcp_logins: Default::default(),
            sandbox,
            catalog,
            live: LiveConversations::default(),
            freed: FreedMemory::default(),
            loads: Default::default(),
            stored_heads: StoredHeads::default(),
            relay_queue: RelayQueue::default(),
            job_answers: tokio::sync::watch::Sender::new(0),
            questions: Questions::new(),
            path_locks: PathLocks::default(),
            direct_calls: RunningCalls::default(),
            activity: Activity::new(),
            telemetry: Telemetry::from_env(),
            schedules_changed: tokio::sync::Notify::new(),
            trigger_limits: Default::default(),
            next_subscription: AtomicU64::new(1),
            shutdown: CancellationToken::new(),
            closing: CancellationToken::new(),
            tasks: TaskTracker::new(),
            connections: TaskTracker::new(),
        })
    }

    pub fn next_subscription_id(&self) -> u64 {
        self.next_subscription.fetch_add(1, Ordering::Relaxed)
    }
}

/// A kernel's id: its machine, pid and 64 random bits (a pid is reused, a machine's name may
/// be shared by containers).
fn kernel_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut random = [0u8; 8];
    if let Err(err) = getrandom::fill(&mut random) {
        tracing::warn!("no randomness for the kernel's id ({err}): its time stands in");
        random = superpi_proto::event::now_ms().to_le_bytes();
    }
    format!("{}/{}/{:016x}", host.trim(), std::process::id(), u64::from_le_bytes(random))
}

/// The kernel, for the tools it registers before it exists (the plan tool): set once it is
/// made; weak, so a tool held by the kernel's own registry never keeps it alive.
#[derive(Clone, Default)]
pub(crate) struct KernelSlot(Arc<OnceLock<Weak<Kernel>>>);

impl KernelSlot {
    pub fn set(&self, kernel: &Arc<Kernel>) {
        let _ = self.0.set(Arc::downgrade(kernel));
    }

    /// The kernel, once it is made and while it lives.
    pub fn get(&self) -> Option<Arc<Kernel>> {
        self.0.get().and_then(Weak::upgrade)
    }
}

impl EventStore for Kernel {
    fn event_store(&self) -> &dyn Store {
        &*self.store
    }

    fn deltas_waiting(&self, conversation_id: i64) {
        self.relay_queue.push(conversation_id);
    }
}

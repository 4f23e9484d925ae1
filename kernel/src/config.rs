//! How a kernel runs ([`KernelConfig`]) and how it fails to start ([`KernelError`]).

use std::path::PathBuf;
use std::time::Duration;

use superpi_proto::Locations;
use superpi_sandbox::ToolRegistry;

use superpi_store::StoreError;

/// How a kernel runs.
#[derive(Debug, Clone)]
pub struct KernelConfig {
    pub data_dir: PathBuf,
    pub config_dir: PathBuf,
    pub runtime_dir: PathBuf,
    /// The managed workspaces' root (`scratch/ID`, `shared/NAME`), outside the data dir.
    pub workspaces_dir: PathBuf,
    /// Exit after this long with no client and no running turn (autostarted kernels).
    pub idle_exit: Option<Duration>,
    pub max_frame: usize,
    /// How far (in events) a watcher may fall behind what a conversation publishes before it
    /// is told it lagged (it then catches up from the store).
    pub event_buffer: usize,
    /// The same bound in bytes of events.
    pub event_buffer_bytes: usize,
    /// A conversation with no watcher, no turn and no request for this long leaves memory
    /// (the next use loads it from the store).
    pub conversation_idle: Duration,
    /// Past this many live conversations the quiet period shrinks to a second.
    pub live_soft_limit: usize,
    /// The program that serves `superpi __sandbox-tool` for file tools.
    pub tool_exe: Option<PathBuf>,
    /// Started by a frontend (not by hand): it may stop for a frontend whose provider
    /// variables it lacks.
    pub autostarted: bool,
    /// The digests of the provider variables this kernel started with (as superpi-client
    /// computes them), compared with each frontend's `hello`; `None`: no comparison.
    pub provider_env: Option<std::collections::BTreeMap<String, String>>,
    /// The store: a PostgreSQL connection string (several kernels can share the database);
    /// `None`: SQLite in the data directory.
    pub database_url: Option<String>,
    /// How long a conversation's lease lasts unrenewed (renewed every third of it while the
    /// kernel lives): how soon another kernel on the same database takes over the conversations
    /// of one that died.
    pub lease_ttl: Duration,
    /// The tools this kernel offers: the built-ins, and any an embedding program registers.
    pub tools: ToolRegistry,
    /// How long until a note's recency halves its rank in a memory search.
    pub memory_half_life: Duration,
}

impl KernelConfig {
    pub fn new(data_dir: PathBuf, config_dir: PathBuf, runtime_dir: PathBuf) -> Self {
        KernelConfig {
            data_dir,
            config_dir,
            runtime_dir,
            // The environment's, as `superpi` resolves it; a caller sets its own.
            workspaces_dir: Locations::from_env().workspaces_dir,
            idle_exit: None,
            max_frame: superpi_proto::frame::DEFAULT_MAX_FRAME,
            event_buffer: 16 * 1024,
            event_buffer_bytes: 8 * 1024 * 1024,
            conversation_idle: Duration::from_secs(30),
            live_soft_limit: 1024,
            tool_exe: None,
            autostarted: false,
            provider_env: None,
            database_url: None,
            lease_ttl: Duration::from_secs(15),
            tools: ToolRegistry::builtin(),
            memory_half_life: crate::features::memory::DEFAULT_HALF_LIFE,
        }
    }

    /// The lease's length in milliseconds, as the store takes it.
    pub(crate) fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease_ttl.as_millis()).unwrap_or(i64::MAX).max(1)
    }

    /// Where this kernel's files are: the socket, the lock file, the store (one place names
    /// them for the kernel and its frontends).
    pub fn locations(&self) -> Locations {
        Locations {
            data_dir: self.data_dir.clone(),
            config_dir: self.config_dir.clone(),
            runtime_dir: self.runtime_dir.clone(),
            workspaces_dir: self.workspaces_dir.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("another kernel already runs for {0}")]
    AlreadyRunning(String),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("configuration: {0}")]
    Config(String),
    #[error("sandbox: {0}")]
    Sandbox(String),
}

impl KernelError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> KernelError {
        let context = context.into();
        move |source| KernelError::Io { context, source }
    }
}

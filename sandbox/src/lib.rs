//! superpi-sandbox: every tool call runs here, in a confined child process.
//!
//! Owns the tool registry (every tool's facts: name, schemas, effects, path arguments, how a
//! user interface shows it, and which runner runs it; the built-in tools and those an
//! embedding program registers), the confined process launcher
//! (landlock, seccomp, capabilities, process group, deadline, kill on cancel), the tool bodies
//! that run inside it, and output that spills to disk past an in-memory cap.
//!
//! It must not know conversations, the store, the event protocol or permission policy: the
//! kernel decides whether a call may run and with what grants; this crate only runs it, and
//! never restricts the calling process itself.
//!
//! Beside that, reading configuration through no link from directories the user owns
//! ([`beneath`]; a workspace's through the confined runner, [`Sandbox::read_tree`]), git for the kernel's checkpoints ([`run_git`]: a fixed argument list, no
//! hook or configured program of the user's), and the embedding program's hold on freed memory ([`memory`]: glibc's mmap
//! threshold and trim), since the calls into the C library that need `unsafe` live here.
//!
//! What the embedding program must do: call [`harden_kernel_process`] once at start; dispatch
//! `argv[1] == TOOL_SUBCOMMAND` to [`tool_main`] before anything else (the file tools run the
//! binary itself as their confined tool runner, see `SandboxConfig::tool_exe`); refuse a
//! client whose peer process [`is_tool_process`]. ARCHITECTURE.md beside this crate explains
//! the design and what remains open.

pub mod beneath;
mod call;
mod catalog;
mod cgroup;
mod confine;
mod filter;
mod git;
mod host;
mod launch;
pub mod memory;
mod mounts;
mod namespace_helper;
mod netwatch;
mod output;
pub mod policy;
#[doc(hidden)]
pub mod profile;
mod reads;
mod reap;
mod registry;
mod result;
mod runner;
mod server;
mod spawn;
mod step;
mod tempdirs;
mod tool_process;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use git::{Committed, GitRepo, NEUTRAL, commit_paths, run_git};
pub use host::{open_browser, run_host_command};
pub use netwatch::Refused as NetworkRefused;
pub use reads::{DEFAULT_DENIED_IN_HOME, ReadGrants, read_grants};
pub use reap::{confined_tools, is_confined_tool, is_tool_process};
pub use registry::{EditorRead, RegistryError, RunFuture, ToolRegistry, ToolRunner};
pub use runner::format_read;
pub use runner::tree::{Tree, TreeEntry, TreeKind, TreeRead, read_tree};
pub use server::{ServerHandle, ServerProcess, ServerSpec};
pub use superpi_paths::check_workspace;
pub use superpi_proto::tool::{Effect, ToolCallResult, ToolDef};
pub use tool_process::{TOOL_SUBCOMMAND, tool_main};

/// How the sandbox runs calls. One per kernel.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The data dir: spill files go to `data_dir/spill/CONVERSATION/TOOL_CALL_ID`.
    pub data_dir: PathBuf,
    /// In-memory output cap before spilling (default 4 MiB).
    pub output_cap_bytes: usize,
    /// Most output text the model gets from one call; past it, the head and the tail
    /// (default 48 KiB).
    pub model_output_bytes: usize,
    /// Default deadline of a call (default 120 s).
    pub default_timeout: Duration,
    /// Between SIGTERM and SIGKILL of a call's group at its deadline or on cancel (default 2 s).
    pub kill_grace: Duration,
    /// How long a descendant that still holds the output pipe may go on after the command
    /// itself exited, before the whole call is killed (default 1 s).
    pub drain_timeout: Duration,
    /// Extra paths readable (and executable) inside the sandbox (toolchains and the like).
    pub extra_read_paths: Vec<PathBuf>,
    /// The home directory whose toolchains and configuration tools read (default: `HOME`).
    pub home: Option<PathBuf>,
    /// Whether tools read the home directory's entries, less the denied ones (default true):
    /// see `reads.rs` and sandbox/ARCHITECTURE.md.
    pub home_reads: bool,
    /// Paths no tool reads, taken away from the home directory and `extra_read_paths`
    /// (besides [`DEFAULT_DENIED_IN_HOME`] and superpi's own directories).
    pub deny_read_paths: Vec<PathBuf>,
    /// Extra paths writable inside the sandbox (besides the workspace and the call's temp dir).
    pub extra_write_paths: Vec<PathBuf>,
    /// superpi's directories besides the data dir (config, runtime): no workspace may hold one.
    pub private_dirs: Vec<PathBuf>,
    /// Environment variable names passed through to tools besides the default allow list
    /// (PATH, HOME, LANG, LC_ALL, LC_CTYPE, TERM, USER, LOGNAME, TZ).
    pub env_allow: Vec<String>,
    /// Variables set for every tool.
    pub env_set: Vec<(String, String)>,
    /// The program that runs the file tools inside the confined process: normally the
    /// `superpi` binary itself, which dispatches `tool_args` to [`tool_main`].
    pub tool_exe: PathBuf,
    /// Arguments before which nothing else is passed (default: [`TOOL_SUBCOMMAND`]).
    pub tool_args: Vec<OsString>,
    /// The shell of the bash tool (default /bin/bash, else /bin/sh).
    pub shell: PathBuf,
    /// Most processes of one call (a pids cgroup where one is available; default 512).
    pub max_pids: u32,
    /// Put each call in a pids cgroup of its own when the machine offers one (default true):
    /// it bounds the process count and finds every descendant at the end of the call.
    pub pids_cgroup: bool,
    /// RLIMIT_NOFILE of a call (default 4096).
    pub max_open_files: u64,
    /// RLIMIT_AS of a call, when set.
    pub max_memory_bytes: Option<u64>,
    /// A private mount namespace in which everything outside the workspace and the call's
    /// temp dir is read-only (default: on; a kernel that is not root makes it inside a user
    /// namespace, where the machine allows unprivileged ones).
    pub readonly_outside: bool,
    /// Turns confinement off explicitly; every call then logs a warning.
    pub disabled: bool,
    /// Tests only: pretend the kernel offers this landlock ABI (0: none).
    #[doc(hidden)]
    pub landlock_abi_override: Option<i32>,
}

impl SandboxConfig {
    pub fn new(data_dir: PathBuf) -> Self {
        let shell = if std::path::Path::new("/bin/bash").exists() { "/bin/bash" } else { "/bin/sh" };
        SandboxConfig {
            data_dir,
            output_cap_bytes: 4 * 1024 * 1024,
            model_output_bytes: 48 * 1024,
            default_timeout: Duration::from_secs(120),
            kill_grace: Duration::from_secs(2),
            drain_timeout: Duration::from_secs(1),
            extra_read_paths: Vec::new(),
            extra_write_paths: Vec::new(),
            home: std::env::var_os("HOME").map(PathBuf::from),
            home_reads: true,
            deny_read_paths: Vec::new(),
            private_dirs: Vec::new(),
            env_allow: Vec::new(),
            env_set: Vec::new(),
            tool_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("superpi")),
            tool_args: vec![OsString::from(TOOL_SUBCOMMAND)],
            shell: PathBuf::from(shell),
            max_pids: 512,
            pids_cgroup: true,
            max_open_files: 4096,
            max_memory_bytes: None,
            readonly_outside: true,
            disabled: false,
            landlock_abi_override: None,
        }
    }
}

/// One tool call to run.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub conversation_id: i64,
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    /// The workspace root: the only place a call may write (besides its temp dir). The
    /// built-in runners refuse a call without one.
    pub workspace: Option<PathBuf>,
    /// Whether the call may open network sockets.
    pub network: bool,
    /// The policy allowed it as a line of known read-only commands: the workspace and
    /// `extra_write_paths` are readable only (landlock; its temp dir stays writable), and git's
    /// programs named by fixed keys (`git::read_only_neutral`) are off.
    pub read_only: bool,
    /// Overrides the default deadline.
    pub timeout: Option<Duration>,
    /// What the file tools must not touch (the conversation's protected paths and superpi's own
    /// directories): checked on every path they open or walk, resolved through symlinks.
    pub protected: superpi_paths::ProtectedPaths,
    /// With the network policy `allowlist`: the hosts a runner that reaches the network itself
    /// (`web_fetch`) may reach, each entry covering its subdomains, checked on every request it
    /// makes, redirects included. `None` when the policy names no hosts.
    pub allowed_hosts: Option<Vec<String>>,
    /// Directories the call may write besides the workspace (a conversation's extra
    /// directories): each is checked as the workspace is (`check_workspace`), granted as it is,
    /// and the file tools take paths inside them.
    pub extra_roots: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox unavailable: {0}")]
    Unavailable(String),
    #[error("sandbox i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// What confinement this machine gives, found by [`Sandbox::new`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxStatus {
    /// The landlock ABI (0: none).
    pub landlock_abi: i32,
    /// Whether each call gets a cgroup that collects (and kills) all its processes.
    pub call_cgroup: bool,
    /// Whether that cgroup also bounds the number of processes (the pids controller).
    pub pids_cgroup: bool,
    /// Whether calls see everything outside the workspace read-only.
    pub readonly_outside: bool,
    /// Confinement turned off by configuration.
    pub disabled: bool,
}

/// Runs tool calls in confined child processes.
#[derive(Debug, Clone)]
pub struct Sandbox {
    config: SandboxConfig,
    inner: Arc<call::Machine>,
    tools: Arc<ToolRegistry>,
}

impl Sandbox {
    /// Checks what the machine offers and compiles the seccomp programs. It fails only when the
    /// filters cannot be built; a missing landlock makes every call fail with a clear message
    /// instead (unless the configuration disables confinement).
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        Self::with_tools(config, ToolRegistry::builtin())
    }

    /// A sandbox that runs the tools of `tools` (the built-ins and any registered since).
    pub fn with_tools(config: SandboxConfig, tools: ToolRegistry) -> Result<Self, SandboxError> {
        let inner = call::Machine::new(&config)?;
        Ok(Sandbox { config, inner: Arc::new(inner), tools: Arc::new(tools) })
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    pub fn status(&self) -> SandboxStatus {
        self.inner.status(&self.config)
    }

    /// The tools this sandbox runs, with their facts, in the order they are offered.
    pub fn tools(&self) -> Vec<ToolDef> {
        self.tools.defs()
    }

    /// The registry of the tools this sandbox runs.
    pub fn registry(&self) -> &ToolRegistry {
        &self.tools
    }

    /// Runs one call to the end (or to its deadline, or until `cancel`), streaming output
    /// chunks of long commands to `progress` when given. Never panics; every failure is an
    /// error outcome the model can read.
    pub async fn run(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
        progress: Option<mpsc::Sender<String>>,
    ) -> ToolCallResult {
        self.inner.run(&self.config, &self.tools, call, cancel, progress).await
    }

    /// A bounded read of the directory `read.beneath` names under `workspace` (a workspace's
    /// `.superpi/skills`), made by the tool runner confined like a read-only call with the
    /// conversation's `protected` paths: the kernel reads what a workspace holds only through a
    /// confined process. Not a tool: nothing a model or a frontend calls reaches it.
    pub async fn read_tree(
        &self,
        workspace: &std::path::Path,
        read: &TreeRead,
        protected: superpi_paths::ProtectedPaths,
        cancel: CancellationToken,
    ) -> Result<Option<Tree>, String> {
        self.inner.read_tree(&self.config, workspace, read, protected, cancel).await
    }

    /// `result` of `call`, run outside the sandbox's runners (an MCP server's), bounded like a
    /// command's output: past the model's limit the whole text is spilled to
    /// `data_dir/spill/CONVERSATION/CALL_ID` and the model gets head, tail, size and path.
    pub fn bounded(&self, call: &ToolCall, result: ToolCallResult) -> ToolCallResult {
        result::bounded(&self.config, result, &call::spill_path(&self.config, call))
    }
}

/// Hardens the kernel process itself; the kernel calls it once at start. Marks the process
/// non-dumpable (so no process of the same user can read its memory or environment through
/// /proc or attach to it) and disables core dumps. It restricts nothing else.
pub fn harden_kernel_process() -> Result<(), SandboxError> {
    // SAFETY: prctl and setrlimit with constant arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 {
            return Err(SandboxError::Io(std::io::Error::last_os_error()));
        }
        let zero = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::setrlimit(libc::RLIMIT_CORE, &zero) != 0 {
            return Err(SandboxError::Io(std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

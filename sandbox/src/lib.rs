//! superpi-sandbox: every tool call runs here, in a confined child process.
//!
//! Owns the built-in tool catalogue (names, schemas, effects), the confined process launcher
//! (landlock, seccomp, capabilities, process group, deadline, kill on cancel), the tool bodies
//! that run inside it, and output that spills to disk past an in-memory cap.
//!
//! It must not know conversations, the store, the event protocol or permission policy: the
//! kernel decides whether a call may run and with what grants; this crate only runs it, and
//! never restricts the calling process itself.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use superpi_proto::tool::{Effect, ToolDef};

/// How the sandbox runs calls. One per kernel.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The data dir: spill files go to `data_dir/spill/CONVERSATION/TOOL_CALL_ID`.
    pub data_dir: PathBuf,
    /// In-memory output cap before spilling (default 4 MiB).
    pub output_cap_bytes: usize,
    /// Default deadline of a call (default 120 s).
    pub default_timeout: Duration,
    /// Extra paths readable (and executable) inside the sandbox (toolchains and the like).
    pub extra_read_paths: Vec<PathBuf>,
    /// Turns confinement off explicitly; every call then logs a warning.
    pub disabled: bool,
}

impl SandboxConfig {
    pub fn new(data_dir: PathBuf) -> Self {
        SandboxConfig {
            data_dir,
            output_cap_bytes: 4 * 1024 * 1024,
            default_timeout: Duration::from_secs(120),
            extra_read_paths: Vec::new(),
            disabled: false,
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
    /// The workspace root: the only place a call may write (besides its temp dir).
    pub workspace: PathBuf,
    /// Whether the call may open network sockets.
    pub network: bool,
    /// Overrides the default deadline.
    pub timeout: Option<Duration>,
}

/// The three channels of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    /// What the model reads.
    pub output: String,
    pub is_error: bool,
    /// Structured output for programs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Details for a user interface (a diff, the spill path, exit code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ToolOutcome {
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutcome { output: message.into(), is_error: true, structured: None, details: None }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox unavailable: {0}")]
    Unavailable(String),
    #[error("sandbox i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs tool calls in confined child processes.
#[derive(Debug, Clone)]
pub struct Sandbox {
    config: SandboxConfig,
}

impl Sandbox {
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        Ok(Sandbox { config })
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The built-in tools.
    pub fn tools(&self) -> Vec<ToolDef> {
        Vec::new()
    }

    /// Runs one call to the end (or to its deadline, or until `cancel`), streaming output
    /// chunks of long commands to `progress` when given. Never panics; every failure is an
    /// error outcome the model can read.
    pub async fn run(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
        progress: Option<mpsc::Sender<String>>,
    ) -> ToolOutcome {
        let _ = (cancel, progress);
        ToolOutcome::error(format!("tool `{}` is not available yet", call.name))
    }
}

//! Shared helpers of the sandbox tests: a sandbox pointed at the crate's tool runner, a
//! workspace, a fake home and data dir outside it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use superpi_sandbox::{Sandbox, SandboxConfig, ToolCall, ToolCallResult};
use tokio_util::sync::CancellationToken;

pub struct Env {
    pub root: tempfile::TempDir,
    pub workspace: PathBuf,
    pub home: PathBuf,
    pub data_dir: PathBuf,
    pub sandbox: Sandbox,
}

pub fn config(data_dir: &Path) -> SandboxConfig {
    let mut config = SandboxConfig::new(data_dir.to_path_buf());
    config.tool_exe = PathBuf::from(env!("CARGO_BIN_EXE_superpi-sandbox-tool"));
    config.tool_args = Vec::new();
    config.default_timeout = Duration::from_secs(30);
    config
}

impl Env {
    pub fn new() -> Env {
        Env::with(|_| {})
    }

    pub fn with(adjust: impl FnOnce(&mut SandboxConfig)) -> Env {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let workspace = base.join("workspace");
        let home = base.join("home");
        let data_dir = home.join(".local/share/superpi");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "-----BEGIN FAKE PRIVATE KEY-----\nsecret\n").unwrap();
        std::fs::create_dir_all(&data_dir).unwrap();
        std::fs::write(data_dir.join("superpi.sqlite"), "SQLite format 3\0fake store").unwrap();
        let mut config = config(&data_dir);
        // The fake home is the one whose entries tools read (less its secrets).
        config.home = Some(home.clone());
        config.env_set.push(("HOME".into(), home.display().to_string()));
        config.env_set.push(("PATH".into(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()));
        adjust(&mut config);
        let sandbox = Sandbox::new(config).unwrap();
        Env { root, workspace, home, data_dir, sandbox }
    }

    pub fn call(&self, name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            conversation_id: 7,
            call_id: format!("call-{name}"),
            name: name.into(),
            arguments,
            workspace: Some(self.workspace.clone()),
            network: false,
            read_only: false,
            timeout: None,
            protected: Default::default(),
            allowed_hosts: None,
        }
    }

    pub async fn run(&self, name: &str, arguments: Value) -> ToolCallResult {
        self.sandbox.run(self.call(name, arguments), CancellationToken::new(), None).await
    }

    pub async fn bash(&self, command: &str) -> ToolCallResult {
        self.run("bash", json!({ "command": command })).await
    }
}

/// A test that cannot confine must fail, not skip.
pub fn assert_confinement_available(env: &Env) {
    let status = env.sandbox.status();
    assert!(status.landlock_abi >= 1, "landlock is missing on this machine: {status:?}");
    let seccomp = std::fs::read_to_string("/proc/self/status").unwrap();
    assert!(seccomp.contains("Seccomp:"), "seccomp is missing on this machine");
}

/// The escape battery's sandbox: default settings, and the test runs as root (as CI does), so
/// every layer is on: landlock, seccomp, the call cgroup and the private read-only mounts.
pub fn root_env() -> Env {
    assert_eq!(unsafe { libc::geteuid() }, 0, "the escape battery runs as root, as CI does");
    let env = Env::new();
    assert_confinement_available(&env);
    let status = env.sandbox.status();
    assert!(status.call_cgroup && status.readonly_outside && !status.disabled, "{status:?}");
    env
}

/// Runs a Python program inside the sandbox (`/usr/bin/python3`, whatever PATH says); more
/// shell may follow on the next line.
pub fn python(script: &str) -> String {
    format!("/usr/bin/python3 - <<'PYEOF'\n{script}\nPYEOF\n")
}

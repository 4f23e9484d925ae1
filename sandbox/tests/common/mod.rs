//! Shared helpers of the sandbox tests: a sandbox pointed at the crate's tool runner, a
//! workspace, a fake home and data dir outside it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

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
            extra_roots: Vec::new(),
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

/// Set in the battery's run as an ordinary user ([`rerun_as_nobody`]).
const AS_NOBODY: &str = "SUPERPI_ESCAPE_AS_NOBODY";
const NOBODY: u32 = 65534;

/// Whether this is the battery's rerun as nobody.
pub fn as_nobody() -> bool {
    std::env::var_os(AS_NOBODY).is_some()
}

/// The escape battery's sandbox: default settings. Run as root (as CI does), every layer is
/// on: landlock, seccomp, the call cgroup and the private read-only mounts; rerun as nobody
/// ([`rerun_as_nobody`]), landlock, seccomp and the read-only mounts (from a user namespace),
/// with the process hardened as a kernel that is not root hardens itself.
pub fn root_env() -> Env {
    if as_nobody() {
        superpi_sandbox::harden_kernel_process().unwrap();
    }
    let env = Env::new();
    assert_confinement_available(&env);
    let status = env.sandbox.status();
    if as_nobody() {
        assert_eq!(unsafe { libc::geteuid() }, NOBODY, "the battery's rerun runs as nobody");
        assert!(status.readonly_outside && !status.disabled, "{status:?}");
    } else {
        assert_eq!(unsafe { libc::geteuid() }, 0, "the escape battery runs as root, as CI does");
        assert!(status.call_cgroup && status.readonly_outside && !status.disabled, "{status:?}");
    }
    env
}

/// The name of the test that reruns its module's battery.
const RERUN: &str = "the_battery_as_an_ordinary_user";

/// Runs the battery of test module `module` (the caller's `module_path!()`) again as nobody
/// (setpriv, util-linux, as tests/nonroot.rs): the same scenarios must be refused without
/// root's extra layers. `skip` names the tests that check a root-only layer (the call cgroup,
/// the read-only mounts) or need root to set up. Does nothing in the rerun itself, so it does
/// not recurse.
pub fn rerun_as_nobody(module: &str, skip: &[&str]) {
    if as_nobody() {
        return;
    }
    // Test names leave out the crate's: `escape::…`, not `all::escape::…`.
    let module = module.split_once("::").map_or(module, |(_, rest)| rest);
    assert_eq!(unsafe { libc::geteuid() }, 0, "setpriv needs root to drop to nobody, as CI has");
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(["--reuid", "65534", "--regid", "65534", "--clear-groups", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["--test-threads", "2", &format!("{module}::"), "--skip", &format!("{module}::{RERUN}")])
        .env(AS_NOBODY, "1")
        .env("HOME", "/nonexistent")
        .env("TMPDIR", "/tmp");
    for name in skip {
        cmd.args(["--skip", &format!("{module}::{name}")]);
    }
    let out = cmd.output().expect("setpriv (util-linux) drops the battery to nobody");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "as nobody:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("test result: ok.") && !stdout.contains(" 0 passed"), "{stdout}");
}

/// Runs a Python program inside the sandbox (`/usr/bin/python3`, whatever PATH says); more
/// shell may follow on the next line.
pub fn python(script: &str) -> String {
    format!("/usr/bin/python3 - <<'PYEOF'\n{script}\nPYEOF\n")
}

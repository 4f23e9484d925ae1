//! Long-lived stdio servers (an MCP server the kernel talks to over its stdin and stdout),
//! confined like a tool call for as long as they run: the same prepared steps (mount
//! namespace, landlock with the workspace and a temp dir writable, seccomp, no capabilities,
//! rlimits, a cgroup), its state directory writable and its `HOME`, an environment from the
//! allow list plus what the configuration names.
//! The process group, the cgroup and every process in them are killed when the handle drops.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tokio::net::unix::pipe;

use crate::launch::{Guard, c_string, env_block, pipe_pair};
use crate::spawn::{Child, Spawn};
use crate::{Sandbox, ToolCall};

/// A server to start.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// A program path, or a name looked up in the server's `PATH`.
    pub program: String,
    pub args: Vec<String>,
    /// Variables set besides the allow list (they win over it).
    pub env: Vec<(String, String)>,
    /// Its working directory (default: the workspace).
    pub cwd: Option<PathBuf>,
    /// The one directory it may write (besides its temp dir).
    pub workspace: PathBuf,
    /// Whether it may open network sockets.
    pub network: bool,
    /// Its own directory, kept between starts: writable, and its `HOME` (unless `env` sets
    /// one). Created when missing.
    pub state_dir: Option<PathBuf>,
    /// Paths it may read and execute besides the system directories and its program (the
    /// installation whose files the program loads: an npm package's `node_modules`).
    pub readable: Vec<PathBuf>,
}

/// A running server: its pipes, and the handle that kills it on drop.
pub struct ServerProcess {
    pub stdin: pipe::Sender,
    pub stdout: pipe::Receiver,
    pub stderr: pipe::Receiver,
    pub handle: ServerHandle,
}

/// Holds a server alive; dropping it kills the server's group and cgroup.
pub struct ServerHandle {
    child: Child,
    _guard: Guard,
    _tmp: crate::tempdirs::CallDir,
}

impl ServerHandle {
    pub fn pid(&self) -> i32 {
        self.child.id()
    }

    /// The internet sockets it was refused so far; None when they are not watched (it has
    /// network, or the machine gives no listener).
    pub fn network_refused(&self) -> Option<crate::netwatch::Refused> {
        self.child.network_watch().map(|w| w.seen())
    }

    /// Waits until the server exits (cancel-safe); its exit status, described.
    pub async fn exited(&mut self) -> String {
        match self.child.wait().await {
            Ok(status) => status.to_string(),
            Err(e) => e.to_string(),
        }
    }

    /// Waits until the server exits (cancel-safe); its exit code, `None` when a signal ended
    /// it (a command that answers by its code: a hook).
    pub async fn exit_code(&mut self) -> Result<Option<i32>, String> {
        self.child.wait().await.map(|status| status.code()).map_err(|e| e.to_string())
    }
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle").field("pid", &self.child.id()).finish()
    }
}

impl Sandbox {
    /// Starts a long-lived server confined to `spec.workspace`. Fails when confinement is
    /// unavailable (unless the configuration turned it off), the workspace is refused, or the
    /// program cannot be found or started.
    pub async fn start_server(&self, spec: ServerSpec) -> Result<ServerProcess, String> {
        let config = &self.config;
        if let Some(refusal) = self.inner.refusal() {
            return Err(refusal.to_string());
        }
        if config.disabled {
            tracing::warn!(program = %spec.program, "sandbox disabled by configuration: starting the server unconfined");
        }
        let workspace = self.inner.checked_workspace(&spec.workspace)?;
        let cwd = spec.cwd.clone().unwrap_or_else(|| workspace.clone());
        let call = ToolCall {
            conversation_id: 0,
            call_id: String::new(),
            name: spec.program.clone(),
            arguments: serde_json::Value::Null,
            workspace: Some(workspace.clone()),
            network: spec.network,
            read_only: false,
            timeout: None,
            protected: Default::default(),
            allowed_hosts: None,
            extra_roots: Vec::new(),
        };
        let path_var = spec.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| OsString::from(v));
        let path_var = path_var.or_else(|| std::env::var_os("PATH"));
        let program = resolve_program(&spec.program, &cwd, path_var.as_deref())?;
        let mut writable = Vec::new();
        if let Some(dir) = &spec.state_dir {
            std::fs::create_dir_all(dir).map_err(|e| format!("its state directory {}: {e}", dir.display()))?;
            writable.push(dir.clone());
        }
        // The files of its installation: where its program and its script arguments live.
        let mut readable = spec.readable.clone();
        readable.extend(std::iter::once(program.clone()).filter_map(|p| installation(&p)));
        readable.extend(spec.args.iter().map(|a| cwd.join(a)).filter(|p| p.is_file()).filter_map(|p| installation(&p)));
        let grants = crate::call::ServerGrants { program: &program, readable: &readable, writable: &writable };
        let setup = self.inner.setup(config, &call, &workspace, &cwd, false, Some(&grants))?;
        let mut env = setup.env;
        if let Some(dir) = &spec.state_dir {
            env.retain(|(name, _)| name != "HOME");
            env.push(("HOME".into(), dir.into()));
        }
        for (k, v) in &spec.env {
            env.retain(|(name, _)| name != k.as_str());
            env.push((k.into(), v.into()));
        }
        let io = |e: std::io::Error| e.to_string();
        let (in_read, in_write) = pipe_pair().map_err(io)?;
        let (out_read, out_write) = pipe_pair().map_err(io)?;
        let (err_read, err_write) = pipe_pair().map_err(io)?;
        let spawn = Spawn {
            program: c_string(program.as_os_str()).map_err(io)?,
            argv: std::iter::once(program.as_os_str().to_owned())
                .chain(spec.args.iter().map(OsString::from))
                .map(|a| c_string(&a))
                .collect::<std::io::Result<_>>()
                .map_err(io)?,
            envp: env_block(&env).map_err(io)?,
            stdio: [in_read, out_write, err_write],
            prepared: setup.prepared,
            status_read: setup.status_read,
            network_watch: setup.network_watch,
        };
        let since = crate::reap::now_ticks();
        // The child holds its namespaces (and their /dev/shm) for as long as the server runs.
        let child = crate::spawn::spawn(spawn).await.map_err(|e| e.to_string())?;
        let guard = Guard::new(child.id(), setup.cgroup, setup.tag, since);
        Ok(ServerProcess {
            stdin: pipe::Sender::from_owned_fd(in_write).map_err(io)?,
            stdout: pipe::Receiver::from_owned_fd(out_read).map_err(io)?,
            stderr: pipe::Receiver::from_owned_fd(err_read).map_err(io)?,
            handle: ServerHandle { child, _guard: guard, _tmp: setup.tmp },
        })
    }
}

/// The installation a server's file belongs to (canonical, through links: `~/.local/bin/x` to
/// its package): the `node_modules` above a script (its dependencies are there), a Python
/// virtual environment (the directory with `pyvenv.cfg`), else the file's own directory. A file
/// in a system directory needs none.
fn installation(file: &Path) -> Option<PathBuf> {
    let file = file.canonicalize().ok()?;
    let system = crate::reads::DEFAULT_READ_EXEC.iter().any(|dir| file.starts_with(dir));
    if system {
        return None;
    }
    for dir in file.ancestors().skip(1).take(8) {
        if dir.file_name().is_some_and(|n| n == "node_modules") || dir.join("pyvenv.cfg").is_file() {
            return Some(dir.to_path_buf());
        }
    }
    // A directory shared by everyone (a script straight in /tmp) is not handed over whole.
    let parent = file.parent()?;
    let shared = ["/", "/tmp", "/var/tmp", "/dev/shm"].iter().any(|d| parent == Path::new(d));
    Some(if shared { file.clone() } else { parent.to_path_buf() })
}

/// The program's path: as given when it names a path (relative to `cwd`), else the first
/// executable file of that name in `path_var`.
fn resolve_program(program: &str, cwd: &Path, path_var: Option<&std::ffi::OsStr>) -> Result<PathBuf, String> {
    let executable = |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let path = cwd.join(program);
        return if executable(&path) { Ok(path) } else { Err(format!("`{program}` is not an executable file")) };
    }
    let dirs = path_var.map(std::env::split_paths).into_iter().flatten();
    dirs.map(|dir| dir.join(program))
        .find(|p| executable(p))
        .ok_or_else(|| format!("`{program}` was not found in PATH"))
}

//! One call from start to result: what the machine offers, the policy of the call, the
//! launch, and the three channels of the result.
//!
//! Over 500 lines on purpose: one call's whole path (its policy, the launch, the three result
//! channels) reads top to bottom here; what it uses lives in modules of its own.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cgroup::{CallCgroup, CgroupBase};
use crate::confine::{Prepared, Program, WatchedLayer};
use crate::launch::{End, Launch};
use crate::mounts::{Entry, Kept, Key, Maker, MountPlan};
use crate::namespace_helper::{Helper, HelperPlan};
use crate::output::Collector;
use crate::policy::{self, FsPolicy, RulesetKey, Rulesets};
use crate::registry::Runner;
use crate::result::bash_outcome;
use crate::runner::tree::{Tree, TreeRead};
use crate::tool_process::{Op, Request};
use crate::{SandboxConfig, SandboxError, SandboxStatus, ToolCall, ToolCallResult, ToolRegistry};

/// Longest deadline a model may ask for.
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// Largest answer of the tool runner (its tools bound their own output far below this).
const RUNNER_OUTPUT_MAX: usize = 32 * 1024 * 1024;
/// Deadline of the runner's read of a directory of configuration (a few milliseconds' work).
const TREE_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USER", "LOGNAME", "TZ"];

/// What this machine offers, found once.
#[derive(Debug)]
pub(crate) struct Machine {
    abi: i32,
    cgroup: Option<CgroupBase>,
    /// The call layers (filter.rs): without network (installed with a listener, the refusing
    /// one where the machine gives none), with network.
    seccomp_watched: Arc<Program>,
    seccomp_offline: Arc<Program>,
    seccomp_network: Arc<Vec<Program>>,
    /// Why calls are refused, when they are.
    refusal: Option<String>,
    /// Whether calls get the private read-only mount namespace (configured, and the machine
    /// allows it: a container's own seccomp profile may refuse unshare, a distribution
    /// unprivileged user namespaces).
    mounts: bool,
    masked: Arc<[CString]>,
    /// A kernel that is not root: what makes the calls' namespaces.
    helper: Option<Helper>,
    /// Makes the private namespaces ahead of calls, and keeps them per workspace (with `mounts`).
    namespaces: Option<Maker>,
    temp_dirs: Arc<crate::tempdirs::TempDirs>,
    /// Makes the calls' landlock rulesets.
    rulesets: Rulesets,
    /// What no workspace may hold.
    own_dirs: OwnDirs,
}

impl Machine {
    pub(crate) fn new(config: &SandboxConfig) -> Result<Machine, SandboxError> {
        let abi = config.landlock_abi_override.unwrap_or_else(policy::landlock_abi);
        // The call layer of the seccomp program; the spawner thread holds the other (spawn.rs).
        use crate::filter::Layer;
        let layer = |layer| crate::filter::program(layer).map_err(|e| SandboxError::Unavailable(e.to_string()));
        let (watched, offline, network) =
            (layer(Layer::WatchedCall)?, layer(Layer::Call { network: false })?, layer(Layer::Call { network: true })?);
        let refusal = (abi == 0 && !config.disabled).then(|| {
            "the sandbox refused to run the tool: this kernel does not offer landlock, so the tool \
             could not be confined (an administrator can turn the sandbox off explicitly in the \
             configuration)"
                .to_string()
        });
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        // Not root: a helper makes them inside a user namespace (namespace_helper.rs).
        let helper = (!root).then(|| Helper { program: config.tool_exe.clone(), args: config.tool_args.clone() });
        let probe = || match &helper {
            None => crate::mounts::probe(),
            Some(helper) => {
                helper.make(&Request::namespaces(HelperPlan::default())).map(drop).map_err(std::io::Error::other)
            }
        };
        let mounts = config.readonly_outside
            && !config.disabled
            && match probe() {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(
                        "no private read-only mount namespace for tool calls ({e}): attribute \
                         changes outside the workspace are then refused by permissions only"
                    );
                    false
                }
            };
        let cgroup = if config.pids_cgroup { CgroupBase::detect() } else { None };
        if let Some(base) = &cgroup {
            base.remove_stale();
        }
        if !config.disabled {
            tracing::info!(landlock_abi = abi, pids_cgroup = cgroup.is_some(), "sandbox ready");
        }
        // Masks hide what root could read by ownership; to anyone else those files are closed.
        let masked: Arc<[CString]> = match root {
            true => policy::masked_files().iter().filter_map(|p| c_path(p)).collect(),
            false => Arc::new([]),
        };
        let namespaces = if mounts { Maker::start(masked.clone(), root).ok() } else { None };
        let (roots, denied) = crate::reads::roots(config);
        let devices: Vec<PathBuf> = policy::DEFAULT_DEVICES.iter().map(PathBuf::from).collect();
        Ok(Machine {
            abi,
            cgroup,
            seccomp_watched: Arc::new(watched),
            seccomp_offline: Arc::new(offline),
            seccomp_network: Arc::new(vec![network]),
            refusal,
            mounts,
            masked,
            helper,
            namespaces,
            temp_dirs: crate::tempdirs::TempDirs::new()
                .map_err(|e| SandboxError::Unavailable(format!("no directory for the calls' temp dirs: {e}")))?,
            rulesets: Rulesets::new(roots, denied, vec![config.shell.clone()], devices, abi),
            own_dirs: OwnDirs::new(config),
        })
    }

    /// The canonical workspace, or why the sandbox refuses it ([`OwnDirs::check`]).
    pub(crate) fn checked_workspace(&self, workspace: &Path) -> Result<PathBuf, String> {
        self.own_dirs.check(workspace)
    }

    /// Why nothing can be confined on this machine, when that is so.
    pub(crate) fn refusal(&self) -> Option<&str> {
        self.refusal.as_deref()
    }

    pub(crate) fn status(&self, config: &SandboxConfig) -> SandboxStatus {
        SandboxStatus {
            landlock_abi: self.abi,
            call_cgroup: self.cgroup.is_some(),
            pids_cgroup: self.cgroup.as_ref().is_some_and(CgroupBase::bounds_pids),
            readonly_outside: self.mounts,
            disabled: config.disabled,
        }
    }

    pub(crate) async fn run(
        &self,
        config: &SandboxConfig,
        tools: &ToolRegistry,
        call: ToolCall,
        cancel: CancellationToken,
        progress: Option<mpsc::Sender<String>>,
    ) -> ToolCallResult {
        let shell = match tools.entry(&call.name).map(|e| e.runner) {
            None => return ToolCallResult::error(format!("unknown tool `{}`", call.name)),
            Some(Runner::Registered(runner)) => {
                let result = runner.run(&call, cancel, progress).await;
                return crate::result::bounded(config, result, &spill_path(config, &call));
            }
            Some(Runner::Shell) => true,
            Some(Runner::File(_)) => false,
        };
        if let Some(refusal) = &self.refusal {
            return ToolCallResult::error(refusal.clone());
        }
        if config.disabled {
            tracing::warn!(tool = %call.name, "sandbox disabled by configuration: running the tool unconfined");
        }
        let Some(workspace) = &call.workspace else {
            return ToolCallResult::error(format!("`{}` needs a workspace and this call has none", call.name));
        };
        let workspace = match self.checked_workspace(workspace) {
            Ok(w) => w,
            Err(e) => return ToolCallResult::error(e),
        };
        // Each extra directory is checked as the workspace is, and handed over canonical.
        let mut call = call;
        match call.extra_roots.iter().map(|root| self.checked_workspace(root)).collect::<Result<Vec<_>, _>>() {
            Ok(roots) => call.extra_roots = roots,
            Err(e) => return ToolCallResult::error(format!("an extra directory of the conversation: {e}")),
        }
        let result = if shell {
            self.bash(config, &call, &workspace, cancel, progress).await
        } else {
            self.file_tool(config, &call, &workspace, cancel).await
        };
        result.unwrap_or_else(ToolCallResult::error)
    }

    async fn bash(
        &self,
        config: &SandboxConfig,
        call: &ToolCall,
        workspace: &Path,
        cancel: CancellationToken,
        progress: Option<mpsc::Sender<String>>,
    ) -> Result<ToolCallResult, String> {
        let args = &call.arguments;
        let command = match args.get("command") {
            Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
            Some(Value::String(_)) => return Err("bash: `command` is empty".into()),
            Some(_) => return Err("bash: `command` must be a string".into()),
            None => return Err("bash: missing required field `command`".into()),
        };
        let timeout = match args.get("timeout") {
            None | Some(Value::Null) => call.timeout.unwrap_or(config.default_timeout),
            Some(v) => match v.as_f64() {
                Some(s) if s > 0.0 => Duration::from_secs_f64(s.min(MAX_TIMEOUT.as_secs_f64())),
                _ => return Err("bash: `timeout` must be a positive number of seconds".into()),
            },
        };
        let cwd = match args.get("cwd") {
            None | Some(Value::Null) => workspace.to_path_buf(),
            Some(Value::String(dir)) => inside_workspace(workspace, dir).map_err(|e| format!("bash: `cwd`: {e}"))?,
            Some(_) => return Err("bash: `cwd` must be a string".into()),
        };
        let started = Instant::now();
        let spill = spill_path(config, call);
        let preparing = Instant::now();
        let setup = self.setup(config, call, workspace, &cwd, false, None)?;
        crate::profile::add(crate::profile::Phase::Prepare, preparing);
        let launch = Launch {
            program: config.shell.clone(),
            args: vec![OsString::from("-c"), OsString::from(command)],
            env: setup.env,
            cwd,
            stdin: None,
            merge_stderr: true,
            prepared: setup.prepared,
            status_read: setup.status_read,
            network_watch: setup.network_watch,
            cgroup: setup.cgroup,
            tag: setup.tag,
            timeout,
            grace: config.kill_grace,
            drain: config.drain_timeout,
            collector: Collector::new(config.output_cap_bytes, spill.clone()),
            progress,
        };
        let finished = crate::launch::run(launch, cancel).await.map_err(|e| e.to_string())?;
        self.temp_dirs.give_back(setup.tmp, finished.contained);
        Ok(bash_outcome(config, finished, timeout, workspace, started.elapsed(), &spill, call.network))
    }

    async fn file_tool(
        &self,
        config: &SandboxConfig,
        call: &ToolCall,
        workspace: &Path,
        cancel: CancellationToken,
    ) -> Result<ToolCallResult, String> {
        let spill_dir = conversation_spill_dir(config, call.conversation_id);
        let request = Request {
            op: Op::Tool { tool: call.name.clone(), arguments: call.arguments.clone() },
            workspace: workspace.to_path_buf(),
            read_roots: if spill_dir.is_dir() { vec![spill_dir] } else { Vec::new() },
            write_roots: call.extra_roots.clone(),
            protected: call.protected.clone(),
        };
        self.tool_runner(config, call, workspace, &request, cancel).await
    }

    /// [`crate::Sandbox::read_tree`]: the runner, confined like a read-only call of no
    /// conversation (the workspace readable only, no network).
    pub(crate) async fn read_tree(
        &self,
        config: &SandboxConfig,
        workspace: &Path,
        read: &TreeRead,
        protected: superpi_paths::ProtectedPaths,
        cancel: CancellationToken,
    ) -> Result<Option<Tree>, String> {
        if let Some(refusal) = &self.refusal {
            return Err(refusal.clone());
        }
        let workspace = self.checked_workspace(workspace)?;
        let call = ToolCall {
            conversation_id: 0,
            call_id: "read-tree".into(),
            name: "the confined read of the workspace's configuration".into(),
            arguments: Value::Null,
            workspace: Some(workspace.clone()),
            network: false,
            read_only: true,
            timeout: Some(TREE_TIMEOUT),
            protected: protected.clone(),
            allowed_hosts: None,
            extra_roots: Vec::new(),
        };
        let request = Request {
            op: Op::ReadTree(read.clone()),
            workspace: workspace.clone(),
            read_roots: Vec::new(),
            write_roots: Vec::new(),
            protected,
        };
        self.tool_runner(config, &call, &workspace, &request, cancel).await?
    }

    /// Runs the tool runner confined for `call` with `request` on its stdin, and reads its one
    /// answer of JSON.
    async fn tool_runner<T: serde::de::DeserializeOwned>(
        &self,
        config: &SandboxConfig,
        call: &ToolCall,
        workspace: &Path,
        request: &Request,
        cancel: CancellationToken,
    ) -> Result<T, String> {
        let stdin = serde_json::to_vec(request).map_err(|e| e.to_string())?;
        let setup = self.setup(config, call, workspace, workspace, true, None)?;
        let launch = Launch {
            program: config.tool_exe.clone(),
            args: config.tool_args.clone(),
            env: setup.env,
            cwd: workspace.to_path_buf(),
            stdin: Some(stdin),
            merge_stderr: false,
            prepared: setup.prepared,
            status_read: setup.status_read,
            network_watch: setup.network_watch,
            cgroup: setup.cgroup,
            tag: setup.tag,
            timeout: call.timeout.unwrap_or(config.default_timeout),
            grace: config.kill_grace,
            drain: config.drain_timeout,
            collector: Collector::new(RUNNER_OUTPUT_MAX, setup.tmp.path.join("runner-output")),
            progress: None,
        };
        let finished = crate::launch::run(launch, cancel).await.map_err(|e| e.to_string())?;
        self.temp_dirs.give_back(setup.tmp, finished.contained);
        match finished.end {
            End::TimedOut => return Err(format!("{}: timed out", call.name)),
            End::Cancelled => return Err(format!("{}: cancelled", call.name)),
            End::Exited => {}
        }
        if finished.output.spill.is_some() {
            return Err(format!("{}: the tool answered more than {RUNNER_OUTPUT_MAX} bytes", call.name));
        }
        serde_json::from_slice::<T>(&finished.output.head).map_err(|_| {
            let why = String::from_utf8_lossy(&finished.stderr);
            let status = match (finished.exit_code(), finished.signal()) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "no exit status".into(),
            };
            format!("{}: the tool runner failed ({status}): {}", call.name, why.trim())
        })
    }

    /// The private namespaces of a call whose mount-level writable trees are `writable`: kept
    /// ones when an earlier call set them up, else fresh ones this call sets up (and keeps).
    fn mount_plan(&self, writable: Vec<PathBuf>) -> Result<MountPlan, String> {
        let binds = || writable.iter().filter(|p| p.exists()).filter_map(|p| c_path(p)).collect();
        let entry = match &self.namespaces {
            Some(maker) => maker.for_call(Key::of(&writable)),
            None => Entry::Fresh { ready: None, keep: None },
        };
        Ok(match entry {
            Entry::Kept(kept) => MountPlan {
                writable: Vec::new(),
                masked: self.masked.clone(),
                private_shm: None,
                ready: Some(kept),
                own_shm: None,
                keep: None,
            },
            Entry::Fresh { ready, keep } => {
                let shm =
                    if std::path::Path::new("/dev/shm").is_dir() { Some(self.temp_dirs.make_shm()?) } else { None };
                if let Some(helper) = &self.helper {
                    let plan = HelperPlan {
                        writable: writable.iter().filter(|p| p.exists()).cloned().collect(),
                        shm: shm.as_ref().map(|dir| dir.path().to_path_buf()),
                    };
                    let namespaces = helper
                        .make(&Request::namespaces(plan))
                        .map_err(|e| format!("the sandbox could not make the call's namespaces: {e}"))?;
                    let kept = Arc::new(Kept { namespaces, shm });
                    if let Some(keep) = keep {
                        keep.commit(kept.clone());
                    }
                    let (masked, writable) = (self.masked.clone(), Vec::new());
                    return Ok(MountPlan {
                        writable,
                        masked,
                        private_shm: None,
                        ready: Some(kept),
                        own_shm: None,
                        keep: None,
                    });
                }
                let private_shm = shm.as_ref().and_then(|dir| c_path(dir.path()));
                let (ready, own_shm) = match ready {
                    Some(namespaces) => (Some(Arc::new(Kept { namespaces, shm })), None),
                    None => (None, shm),
                };
                MountPlan { writable: binds(), masked: self.masked.clone(), private_shm, ready, own_shm, keep }
            }
        })
    }

    /// The policy, the descriptors and the environment of one call (with a server's grants
    /// besides, for a server process).
    pub(crate) fn setup(
        &self,
        config: &SandboxConfig,
        call: &ToolCall,
        workspace: &Path,
        cwd: &Path,
        runner: bool,
        server: Option<&ServerGrants<'_>>,
    ) -> Result<Setup, String> {
        let tmp = self.temp_dirs.take()?;
        let tmp_path = tmp.path.clone();
        let confined = !config.disabled;

        // The kernel's own paths are opened once (`Rulesets`); these are the call's.
        let opened = self.rulesets.current();
        let mut read_exec = Vec::new();
        if runner {
            read_exec.push(config.tool_exe.clone());
        }
        if let Some(server) = server {
            // Its program and installation, less what is denied wherever it is.
            let mut paths = vec![server.program.to_path_buf()];
            paths.extend(server.readable.iter().cloned());
            read_exec.extend(self.rulesets.decided(&paths));
        }
        let spill_dir = conversation_spill_dir(config, call.conversation_id);
        // Writable at the mount level (the namespace binds them once per set of trees): the
        // workspace, what the configuration and a server add, and the directory of every call's
        // temp dir. Landlock grants the call its own temp dir only.
        let mut mount_writable = vec![workspace.to_path_buf()];
        mount_writable.extend(call.extra_roots.iter().cloned());
        mount_writable.extend(config.extra_write_paths.iter().cloned());
        mount_writable.extend(server.iter().flat_map(|s| s.writable.iter().cloned()));
        // A read-only call reads them only: the same mounts (and namespaces), no landlock
        // write grant, so nothing it starts can write there either.
        let mut landlock_rw: Vec<PathBuf> = Vec::new();
        if call.read_only {
            read_exec.extend(mount_writable.iter().cloned());
        } else {
            landlock_rw.extend(mount_writable.iter().cloned());
        }
        mount_writable.push(self.temp_dirs.root().to_path_buf());
        let mounts = if confined && self.mounts { Some(self.mount_plan(mount_writable)?) } else { None };
        landlock_rw.extend(mounts.as_ref().and_then(MountPlan::shm_dir));
        // The call's rules but for its temp dir: a temp dir used before keeps the ruleset made
        // for the rules of its last call with it, which serves the next call with the same
        // (a ruleset is not used up by a restriction); else one is made here and kept with it.
        let rules = RulesetKey::new(
            FsPolicy {
                read_exec,
                read_only: if runner { vec![spill_dir] } else { Vec::new() },
                read_write: landlock_rw,
                devices: Vec::new(),
            },
            call.network,
            opened.generation,
        );
        let mut tmp = tmp;
        let landlock = match &tmp.ruleset {
            _ if !confined => None,
            Some((made_for, ruleset)) if *made_for == rules => Some(ruleset.clone()),
            _ => {
                let ruleset = Arc::new(self.rulesets.build(&opened, &rules, &tmp_path).map_err(|e| e.to_string())?);
                tmp.ruleset = Some((rules, ruleset.clone()));
                Some(ruleset)
            }
        };
        let cgroup = match &self.cgroup {
            Some(base) => {
                Some(base.create(config.max_pids).map_err(|e| format!("could not create the call's cgroup: {e}"))?)
            }
            None => None,
        };
        let cgroup_procs = cgroup.as_ref().map(CallCgroup::procs_fd);
        let mut limits = vec![
            (libc::RLIMIT_CORE as i32, 0u64),
            (libc::RLIMIT_NOFILE as i32, config.max_open_files),
            // The mark of a confined tool, which the peer checks read (reap.rs).
            (libc::RLIMIT_LOCKS as i32, crate::reap::LOCKS_MARK),
        ];
        if let Some(bytes) = config.max_memory_bytes {
            limits.push((libc::RLIMIT_AS as i32, bytes));
        }
        let (status_read, status_write) = crate::launch::pipe_pair().map_err(|e| e.to_string())?;
        let (seccomp, watched, network_watch) = match (confined, call.network) {
            (false, _) => (Arc::new(Vec::new()), None, None),
            (true, false) => {
                let (parent, child) = crate::netwatch::channel().map_err(|e| e.to_string())?;
                let layer = WatchedLayer {
                    program: self.seccomp_watched.clone(),
                    fallback: self.seccomp_offline.clone(),
                    channel: child,
                };
                (Arc::new(Vec::new()), Some(layer), Some(parent))
            }
            (true, true) => (self.seccomp_network.clone(), None, None),
        };
        let prepared = Prepared {
            parent_pid: std::process::id() as i32,
            status: status_write,
            cgroup_procs,
            mounts,
            cwd: c_path(cwd).ok_or("the working directory contains a NUL byte")?,
            limits,
            drop_capabilities: confined,
            bounding_set_empty: false,
            landlock,
            seccomp,
            watched,
        };
        let tag = crate::reap::new_tag();
        let mut env = environment(config, &tmp_path, call.network);
        if call.read_only {
            read_only_git(&mut env);
        }
        env.push((crate::reap::TAG_VAR.into(), tag.clone().into()));
        Ok(Setup { tmp, prepared, status_read, network_watch, cgroup, env, tag })
    }
}

/// What a long-lived server gets besides a call's grants: its program readable and
/// executable, and its own directories writable.
pub(crate) struct ServerGrants<'a> {
    pub program: &'a Path,
    pub readable: &'a [PathBuf],
    pub writable: &'a [PathBuf],
}

pub(crate) struct Setup {
    pub tmp: crate::tempdirs::CallDir,
    pub prepared: Prepared,
    pub status_read: std::os::fd::OwnedFd,
    /// The parent's end of the channel the watched layer's listener comes through.
    pub network_watch: Option<std::os::fd::OwnedFd>,
    pub cgroup: Option<crate::cgroup::CallCgroup>,
    pub env: Vec<(OsString, OsString)>,
    pub tag: String,
}

fn c_path(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// Set for every call unless the kernel's environment (through `env_allow`) or `env_set` says
/// otherwise: the toolchains' caches under the home directory are read-only to tools, so what
/// they must write goes to the call's temp dir, and none asks on a terminal it does not have.
const TOOLCHAIN_ENV: &[(&str, &str)] = &[
    // Go's build cache must be writable; its module cache is only read.
    ("GOCACHE", "$TMPDIR/go-build"),
    // npm writes its logs and cache there; its packages come from node_modules.
    ("npm_config_cache", "$TMPDIR/npm-cache"),
    // A push or fetch that needs a password fails instead of waiting on a prompt.
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// Set for a call without network: the toolchains use their caches only and say so when
/// something is missing, instead of retrying a network they cannot reach.
const OFFLINE_ENV: &[(&str, &str)] = &[("CARGO_NET_OFFLINE", "true"), ("GOPROXY", "off"), ("PIP_NO_INDEX", "1")];

fn environment(config: &SandboxConfig, tmp: &Path, network: bool) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let names = DEFAULT_ENV.iter().map(|s| s.to_string()).chain(config.env_allow.iter().cloned());
    for name in names {
        if let Some(value) = std::env::var_os(&name) {
            env.push((name.into(), value));
        }
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    for key in ["TMPDIR", "TMP", "TEMP"] {
        env.push((key.into(), tmp.as_os_str().to_owned()));
    }
    let offline = if network { &[][..] } else { OFFLINE_ENV };
    for (name, value) in TOOLCHAIN_ENV.iter().chain(offline) {
        let given = env.iter().any(|(k, _)| k == name) || config.env_set.iter().any(|(k, _)| k == name);
        if !given {
            let value = value.replace("$TMPDIR", &tmp.to_string_lossy());
            env.push((name.into(), value.into()));
        }
    }
    for (k, v) in &config.env_set {
        env.push((k.into(), v.into()));
    }
    env
}

/// Turns off, for a read-only call, the programs git would start that a planted
/// configuration names with a fixed key ([`crate::git::read_only_neutral`]), through
/// `GIT_CONFIG_COUNT`, which wins over every configuration file; any such variable the
/// kernel's environment passed is replaced. The rest (`diff.external`, textconv drivers) runs
/// with the call's read-only workspace.
fn read_only_git(env: &mut Vec<(OsString, OsString)>) {
    env.retain(|(k, _)| !k.as_bytes().starts_with(b"GIT_CONFIG_"));
    let neutral = crate::git::read_only_neutral();
    env.push(("GIT_CONFIG_COUNT".into(), neutral.len().to_string().into()));
    for (i, (key, value)) in neutral.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}").into(), (*key).into()));
        env.push((format!("GIT_CONFIG_VALUE_{i}").into(), (*value).into()));
    }
}

/// What a workspace may not hold: the home directory and superpi's own directories (data:
/// the store; config: settings and tokens; runtime: the socket), canonical, found once per
/// sandbox (each call's check would otherwise resolve them all again). A directory missing
/// then is resolved at each check.
#[derive(Debug)]
pub(crate) struct OwnDirs {
    home: Option<PathBuf>,
    dirs: Vec<Result<PathBuf, PathBuf>>,
}

impl OwnDirs {
    pub(crate) fn new(config: &SandboxConfig) -> OwnDirs {
        let dirs = std::iter::once(&config.data_dir).chain(&config.private_dirs);
        OwnDirs {
            home: superpi_paths::home_dir(),
            dirs: dirs.map(|dir| dir.canonicalize().map_err(|_| dir.clone())).collect(),
        }
    }

    /// The canonical workspace, refused when handing it over would hand over what the sandbox
    /// exists to protect: the whole filesystem, the home directory (its credentials),
    /// superpi's own directories.
    pub(crate) fn check(&self, workspace: &Path) -> Result<PathBuf, String> {
        let dirs = self.dirs.iter().map(|dir| match dir {
            Ok(canonical) => canonical.clone(),
            Err(dir) => dir.canonicalize().unwrap_or_else(|_| dir.clone()),
        });
        superpi_paths::check_canonical_workspace(workspace, self.home.as_deref(), dirs)
    }
}

/// Resolves `dir` (relative to the workspace or absolute) and checks that it stays inside.
fn inside_workspace(workspace: &Path, dir: &str) -> Result<PathBuf, String> {
    let joined = workspace.join(dir);
    let canonical = joined.canonicalize().map_err(|e| format!("{dir}: {e}"))?;
    if !canonical.starts_with(workspace) {
        return Err(format!("{dir} is outside the workspace {}", workspace.display()));
    }
    Ok(canonical)
}

fn conversation_spill_dir(config: &SandboxConfig, conversation: i64) -> PathBuf {
    config.data_dir.join("spill").join(conversation.to_string())
}

pub(crate) fn spill_path(config: &SandboxConfig, call: &ToolCall) -> PathBuf {
    let name: String = call
        .call_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(128)
        .collect();
    let name = if name.is_empty() { "call".to_string() } else { name };
    conversation_spill_dir(config, call.conversation_id).join(name)
}

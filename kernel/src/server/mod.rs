//! The kernel socket: directories, the one-kernel lock, the listener and its accept loop.

pub(crate) mod connection;
pub(crate) mod handlers;
pub(crate) mod peer;
pub(crate) mod provider_env;
pub(crate) mod tool_call;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nix::fcntl::{Flock, FlockArg};
use superpi_proto::tool::ToolDef;
use superpi_sandbox::{Sandbox, SandboxConfig};
use tokio::net::{UnixListener, UnixStream};

use crate::catalog::Catalog;
use crate::config::{KernelConfig, KernelError};
use crate::kernel::{Kernel, KernelSlot};

/// Runs a kernel in the foreground until `kernel.shutdown`, a signal, or (autostarted) idleness.
pub async fn run(mut config: KernelConfig) -> Result<(), KernelError> {
    // The kernel's own tools join the registry before anything reads it.
    let slot = KernelSlot::default();
    for (def, runner) in own_tools(&slot, &config.config_dir) {
        config.tools.register(def, runner).map_err(|e| KernelError::Config(format!("the kernel's own tools: {e}")))?;
    }
    make_private_dir(&config.data_dir)?;
    make_private_dir(&config.runtime_dir)?;
    // Made before the sandbox reads its grants: the root is denied to every tool's reads, and
    // each managed workspace below it is given to its own conversation's tools alone.
    make_private_dir(&config.workspaces_dir)?;
    let _lock = take_lock(&config)?;
    // Everything that can fail on bad configuration fails before the socket exists, so a
    // frontend that started this kernel sees it exit and reads why in its log.
    let catalog = Catalog::load(&config).map_err(KernelError::Config)?;
    let store = superpi_store::open(config.database_url.as_deref(), &config.locations().database_path())?;
    let mut sandbox_config = SandboxConfig::new(config.data_dir.clone());
    if let Some(exe) = &config.tool_exe {
        sandbox_config.tool_exe = exe.clone();
    }
    catalog.apply_sandbox_settings(&mut sandbox_config);
    // No workspace may hold the config dir (settings, tokens) or the runtime dir (the socket),
    // like the data dir.
    let workspaces = config.workspaces_dir.canonicalize().unwrap_or_else(|_| config.workspaces_dir.clone());
    sandbox_config.private_dirs = vec![config.config_dir.clone(), config.runtime_dir.clone(), workspaces];
    let sandbox =
        Sandbox::with_tools(sandbox_config, config.tools.clone()).map_err(|e| KernelError::Sandbox(e.to_string()))?;

    let socket_path = config.locations().socket_path();
    clear_stale_socket(&socket_path).await?;
    let listener =
        UnixListener::bind(&socket_path).map_err(KernelError::io(format!("binding {}", socket_path.display())))?;
    fs::set_permissions(&socket_path, fs::Permissions::from_mode(0o600))
        .map_err(KernelError::io("restricting the socket to 0600"))?;
    if let Err(err) = superpi_sandbox::harden_kernel_process() {
        tracing::warn!("could not harden the kernel process: {err}");
    }
    let kernel = Kernel::new(config, store, sandbox, catalog);
    slot.set(&kernel);

    // A store no other kernel shares: the leases in it are its previous kernel's, dead.
    if !kernel.store.shared() {
        kernel.store.expire_all()?;
    }
    // Artifact files an older kernel kept only in the data dir join the store, once.
    match crate::tools::artifact::import_files(&*kernel.store, &kernel.config.data_dir) {
        Ok(0) => {}
        Ok(n) => tracing::info!("{n} artifact files of an older version put into the store"),
        Err(err) => tracing::warn!("putting older artifact files into the store: {err}"),
    }
    // What dead kernels left (running turns, queued prompts) is taken over before any client.
    crate::cluster::adopt_orphans(&kernel)?;
    tracing::info!(socket = %socket_path.display(), pid = std::process::id(), kernel = %kernel.id, "kernel listening");

    let idle = tokio::spawn(watch_idleness(kernel.clone()));
    let cluster = tokio::spawn(crate::cluster::run(kernel.clone()));
    let relay = tokio::spawn(crate::cluster::relay(kernel.clone()));
    let scheduler = tokio::spawn(crate::scheduler::run(kernel.clone()));
    let freed = tokio::spawn({
        let kernel = kernel.clone();
        async move { kernel.freed.run(&kernel.shutdown).await }
    });
    let result = accept_loop(&kernel, &listener).await;
    idle.abort();
    cluster.abort();
    relay.abort();
    scheduler.abort();
    freed.abort();
    drop(listener);
    let _ = fs::remove_file(&socket_path);
    drain(&kernel).await;
    tracing::info!("kernel stopped");
    // The lock goes last (when this returns): whoever waits for it finds the socket gone.
    result
}

/// The kernel's own tools (plan, questions, subagents, skills, the memory, schedule and web
/// blocks), each runner reaching the kernel through `slot` once it is made.
pub(crate) fn own_tools(slot: &KernelSlot, config_dir: &Path) -> Vec<(ToolDef, Arc<dyn superpi_sandbox::ToolRunner>)> {
    let mut own: Vec<(_, Arc<dyn superpi_sandbox::ToolRunner>)> = vec![
        (crate::tools::plan::def(), Arc::new(crate::tools::plan::PlanTool { kernel: slot.clone() })),
        (crate::tools::artifact::def(), Arc::new(crate::tools::artifact::ArtifactTool { kernel: slot.clone() })),
        (crate::tools::question::def(), Arc::new(crate::tools::question::QuestionTool { kernel: slot.clone() })),
        (crate::tools::subagent::def(), Arc::new(crate::tools::subagent::SubagentTool { kernel: slot.clone() })),
        (
            crate::tools::skill::def(),
            Arc::new(crate::tools::skill::SkillTool { config_dir: config_dir.to_path_buf(), kernel: slot.clone() }),
        ),
    ];
    for (def, tool) in [
        (crate::turn::handoff::def(), crate::tools::handover::Handover::Handoff),
        (crate::turn::loadout::escalate_def(), crate::tools::handover::Handover::Escalate),
    ] {
        own.push((def, Arc::new(crate::tools::handover::HandoverTool { kernel: slot.clone(), tool })));
    }
    for op in crate::tools::memory::Op::ALL {
        own.push((
            crate::tools::memory::def(op),
            Arc::new(crate::tools::memory::MemoryTool { kernel: slot.clone(), op }),
        ));
    }
    for op in crate::tools::schedule::Op::ALL {
        let runner = crate::tools::schedule::ScheduleTool { kernel: slot.clone(), op };
        own.push((crate::tools::schedule::def(op), Arc::new(runner)));
    }
    // The web block reads the user's `web` settings at each call, so a change needs no restart.
    let config_dir = config_dir.to_path_buf();
    let web_settings: superpi_web::WebSettingsSource =
        Arc::new(move || superpi_policy::Settings::load(&config_dir, None).map(|s| s.web).map_err(|e| e.to_string()));
    own.extend(superpi_web::tools(web_settings));
    own
}

/// How long a stop waits for running turns to end as interrupted.
const DRAIN_TURNS: Duration = Duration::from_secs(10);
/// How long a stop then waits for connections to send what is queued for them.
const DRAIN_CONNECTIONS: Duration = Duration::from_secs(5);

/// A clean stop: running turns end as interrupted (their tool calls get results) and queued
/// ones are recorded, watchers get those ends, connections flush and close, and the store's
/// log is folded into the database. Waits on the tasks themselves, bounded.
async fn drain(kernel: &Arc<Kernel>) {
    kernel.shutdown.cancel();
    kernel.tasks.close();
    if tokio::time::timeout(DRAIN_TURNS, kernel.tasks.wait()).await.is_err() {
        tracing::warn!("turns still running {DRAIN_TURNS:?} after the stop began: stopping without them");
    }
    kernel.closing.cancel();
    kernel.connections.close();
    if tokio::time::timeout(DRAIN_CONNECTIONS, kernel.connections.wait()).await.is_err() {
        tracing::warn!("connections still open {DRAIN_CONNECTIONS:?} after the turns ended: closing them");
    }
    // Another kernel on the database may take these conversations over at once.
    if let Err(err) = kernel.store.release_all(&kernel.id) {
        tracing::warn!("giving this kernel's leases up at stop: {err}");
    }
    if let Err(err) = kernel.store.checkpoint() {
        tracing::warn!("folding the store's log at stop: {err}");
    }
}

async fn accept_loop(kernel: &Arc<Kernel>, listener: &UnixListener) -> Result<(), KernelError> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(KernelError::io("installing SIGTERM handler"))?;
    loop {
        tokio::select! {
            _ = kernel.shutdown.cancelled() => return Ok(()),
            _ = terminate.recv() => return Ok(()),
            _ = tokio::signal::ctrl_c() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if let Err(reason) = admit(&stream) {
                        tracing::warn!("refused a client: {reason}");
                        continue;
                    }
                    kernel.activity.touch();
                    kernel.connections.spawn(crate::server::connection::serve(kernel.clone(), stream));
                }
                Err(err) => {
                    tracing::warn!("accept failed: {err}");
                }
            }
        }
    }
}

/// The peer must be this user, and must not be one of this kernel's own tool processes
/// (a confined tool could otherwise act as a frontend and answer its own questions).
fn admit(stream: &UnixStream) -> Result<(), String> {
    let cred = stream.peer_cred().map_err(|e| format!("no peer credentials: {e}"))?;
    let me = nix::unistd::geteuid().as_raw();
    if cred.uid() != me {
        return Err(format!("peer uid {} is not {me}", cred.uid()));
    }
    if let Some(pid) = cred.pid()
        && u32::try_from(pid).is_ok_and(superpi_sandbox::is_tool_process)
    {
        return Err(format!("peer pid {pid} is one of the kernel's own tool processes"));
    }
    Ok(())
}

fn make_private_dir(dir: &Path) -> Result<(), KernelError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(KernelError::io(format!("creating {}", dir.display())))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(KernelError::io(format!("restricting {} to 0700", dir.display())))
}

/// One kernel per data directory: an exclusive flock on `kernel.lock`, holding our pid.
fn take_lock(config: &KernelConfig) -> Result<Flock<File>, KernelError> {
    let path = config.locations().lock_path();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(KernelError::io(format!("opening {}", path.display())))?;
    let mut lock = Flock::lock(file, FlockArg::LockExclusiveNonblock)
        .map_err(|_| KernelError::AlreadyRunning(config.data_dir.display().to_string()))?;
    lock.set_len(0).map_err(KernelError::io("truncating the lock file"))?;
    writeln!(lock, "{}", std::process::id()).map_err(KernelError::io("writing the lock file"))?;
    Ok(lock)
}

use std::os::unix::fs::OpenOptionsExt;

/// A socket file left by a dead kernel is removed; a live one means another kernel.
async fn clear_stale_socket(path: &Path) -> Result<(), KernelError> {
    if !path.exists() {
        return Ok(());
    }
    match UnixStream::connect(path).await {
        Ok(_) => Err(KernelError::AlreadyRunning(path.display().to_string())),
        Err(_) => fs::remove_file(path).map_err(KernelError::io(format!("removing stale {}", path.display()))),
    }
}

async fn watch_idleness(kernel: Arc<Kernel>) {
    let Some(limit) = kernel.config.idle_exit else { return };
    let mut tick = tokio::time::interval(Duration::from_millis(500).min(limit));
    loop {
        tick.tick().await;
        // A kernel with a schedule to run stays: its runs need nobody present.
        if kernel.activity.idle_for().is_some_and(|idle| idle >= limit) && !has_schedules(&kernel) {
            tracing::info!("no client, no turn and no schedule for {limit:?}: exiting");
            kernel.shutdown.cancel();
            return;
        }
    }
}

/// Whether a schedule has a tick to come (a trigger keeps no kernel running: its deliveries
/// come through a gateway, whose connection keeps the kernel).
fn has_schedules(kernel: &Kernel) -> bool {
    kernel
        .store
        .next_tick()
        .unwrap_or_else(|err| {
            tracing::warn!("reading the next schedule tick: {err}");
            None
        })
        .is_some()
}

/// Whether a kernel answers on `socket` (for `superpi kernel status` without autostart).
pub async fn status_of_socket(socket: &Path) -> bool {
    UnixStream::connect(socket).await.is_ok()
}

#[cfg(test)]
#[path = "own_tools_tests.rs"]
mod own_tools_tests;

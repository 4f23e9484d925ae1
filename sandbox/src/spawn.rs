//! Starting a confined child as cheaply as `posix_spawn`: one `clone(CLONE_VM | CLONE_VFORK)`
//! on the spawner thread, the confinement steps and `execve` in the child, the exit awaited
//! through a pidfd.
//!
//! A plain `fork` (what a `pre_exec` hook makes the standard library do) copies the page
//! tables of the whole multi-threaded parent, and every page the parent then writes before the
//! child execs is copied again. Sharing the memory instead costs nothing, and is sound because
//! the child only makes raw system calls on values the parent prepared (see confine.rs) while
//! the forking thread is suspended; the other threads never see the child's stack.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, OnceLock};

use libc::{c_char, c_int, c_void};
use tokio::io::unix::AsyncFd;

use crate::confine::Prepared;
use crate::mounts::Kept;
use crate::step::Step;

/// The child's stack: it runs only the confinement steps and execve.
const CHILD_STACK: usize = 256 * 1024;

/// What to start, all made before the clone.
pub(crate) struct Spawn {
    pub program: CString,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    /// The child's descriptors 0, 1 and 2.
    pub stdio: [OwnedFd; 3],
    pub prepared: Prepared,
    pub status_read: OwnedFd,
    /// The parent's end of the channel of the watched seccomp layer's listener (confine.rs).
    pub network_watch: Option<OwnedFd>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    #[error("the sandbox could not {}: {source}", step.describe())]
    Confine { step: Step, source: io::Error },
    #[error("could not start `{program}`: {source}")]
    Exec { program: String, source: io::Error },
    #[error("could not start a process: {0}")]
    Clone(io::Error),
}

/// A started child: its exit is awaited through its pidfd. Dropped before it was reaped, it is
/// killed and reaped in the background.
#[derive(Debug)]
pub(crate) struct Child {
    pid: libc::pid_t,
    pidfd: Option<AsyncFd<OwnedFd>>,
    /// The child's private namespaces, held open: freeing a mount namespace waits for an RCU
    /// grace period (milliseconds on a busy machine), which the last process of the call would
    /// otherwise spend before its exit is seen. Released off the call's path.
    namespace: Option<Arc<Kept>>,
    /// Answers the internet sockets of a call without network (netwatch.rs).
    network: Option<crate::netwatch::NetWatch>,
}

type Job = Box<dyn FnOnce(&mut ChildStack) + Send>;

/// The thread every call is cloned from. The parent-death signal of a child fires when the
/// *thread* that created it ends, so cloning from a tokio thread that may later leave (a
/// blocking thread, a worker moved by block_in_place) could kill a running tool. This thread
/// lives as long as the process and owns the one stack its children run on until they exec
/// (CLONE_VFORK suspends it meanwhile, so one is enough).
///
/// Confined children come from a thread of their own, which sets up once what its children
/// inherit from it instead of doing it each: its capability bounding set emptied (the bounding
/// set belongs to a thread's credentials; dropping each capability in every child was some 40
/// credential commits, a twentieth of a millisecond per call) and the spawner layer of the
/// seccomp program (filter.rs), so that a child installs only the short call layer. The thread
/// keeps its effective capabilities, which the child needs for its namespaces and drops itself
/// before exec. Unconfined children (confinement disabled by configuration) come from another
/// thread, so that root's programs keep theirs.
struct Spawner {
    jobs: std::sync::mpsc::Sender<Job>,
    /// Whether the thread holds the spawner layer of the seccomp program (else each child
    /// installs it before the call layer).
    layered: bool,
    /// Whether the thread's bounding set is empty (else each child drops what is left).
    bounding_set_empty: bool,
}

fn spawner(confined: bool) -> Option<&'static Spawner> {
    static CONFINED: OnceLock<Option<Spawner>> = OnceLock::new();
    static UNCONFINED: OnceLock<Option<Spawner>> = OnceLock::new();
    let cell = if confined { &CONFINED } else { &UNCONFINED };
    cell.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<(bool, bool)>();
        std::thread::Builder::new()
            .name("superpi-sandbox-spawner".into())
            .spawn(move || {
                let emptied = confined && empty_bounding_set();
                let layered = confined && install_spawner_layer();
                let _ = ready_tx.send((layered, emptied));
                let mut stack = ChildStack::default();
                while let Ok(job) = rx.recv() {
                    job(&mut stack);
                }
            })
            .ok()?;
        let (layered, bounding_set_empty) = ready_rx.recv().ok()?;
        Some(Spawner { jobs: tx, layered, bounding_set_empty })
    })
    .as_ref()
}

/// The seccomp program every confined child would install but for the calls it still makes
/// itself, installed on the calling thread (which needs no_new_privs for it without
/// CAP_SYS_ADMIN; its children set it anyway). False when it could not be.
fn install_spawner_layer() -> bool {
    let Ok(program) = crate::filter::program(crate::filter::Layer::Spawner) else { return false };
    let fprog = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr() as *mut libc::sock_filter };
    // SAFETY: prctl on this thread with a program that outlives the call (the kernel copies it).
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &fprog as *const libc::sock_fprog as libc::c_ulong,
                0,
                0,
            ) == 0
    }
}

/// Drops every capability of the calling thread's bounding set it may drop (it needs
/// CAP_SETPCAP; without it there is nothing to drop). True when the set is empty.
fn empty_bounding_set() -> bool {
    for cap in 0..64 {
        // SAFETY: prctl on this thread's own credentials.
        match unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) } {
            1 => {
                // SAFETY: as above.
                if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
                    return false;
                }
            }
            0 => {}
            _ => return true, // past the last capability this kernel knows
        }
    }
    true
}

/// An mmap'ed stack with a guard page below it, made on first use.
#[derive(Default)]
struct ChildStack {
    base: usize,
}

impl ChildStack {
    fn top(&mut self) -> io::Result<*mut c_void> {
        if self.base == 0 {
            let page = 4096;
            // SAFETY: a fresh anonymous mapping, never unmapped while the thread lives.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    CHILD_STACK + page,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                    -1,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: the lowest page of the mapping we just made becomes the guard.
            unsafe { libc::mprotect(base, page, libc::PROT_NONE) };
            self.base = base as usize + page;
        }
        // The stack grows down from the end of the mapping (16-byte aligned).
        Ok((self.base + CHILD_STACK) as *mut c_void)
    }
}

/// What the child reads: pointers into the parent's memory, valid while the parent waits.
struct ChildArgs<'a> {
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    stdio: [RawFd; 3],
    prepared: &'a Prepared,
}

/// The child. Async-signal-safe: raw system calls only, on prepared values; it never returns.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the ChildArgs the suspended parent passed to clone.
    let args = unsafe { &*(arg as *const ChildArgs<'_>) };
    let (step, errno) = match child_steps(args) {
        Ok(()) => (Step::Exec, libc::EIO),
        Err(failure) => failure,
    };
    let mut record = [0u8; 5];
    record[0] = step as u8;
    record[1..].copy_from_slice(&errno.to_ne_bytes());
    // SAFETY: a write from a stack buffer to our status pipe, then _exit.
    unsafe {
        libc::write(args.prepared.status.as_raw_fd(), record.as_ptr().cast(), record.len());
        libc::_exit(127)
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

fn child_steps(args: &ChildArgs<'_>) -> Result<(), (Step, i32)> {
    // SAFETY (whole function): system calls on stack values and prepared descriptors.
    unsafe {
        // Handlers of the parent must never run on this stack: back to the defaults, then
        // unblock what the parent blocked around the clone. SIGPIPE, which the Rust runtime
        // ignores, is a program's default again (as the standard library's spawn does).
        for signal in 1..=64 {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                && (old.sa_sigaction != libc::SIG_IGN || signal == libc::SIGPIPE)
                && old.sa_sigaction != libc::SIG_DFL
            {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());

        for (target, fd) in args.stdio.iter().enumerate() {
            if libc::dup2(*fd, target as c_int) < 0 {
                return Err((Step::Stdio, errno()));
            }
        }
        args.prepared.run_steps()?;
        libc::execve(args.program, args.argv, args.envp);
        Err((Step::Exec, errno()))
    }
}

/// Moves a descriptor above 2, so that installing the child's stdio never overwrites another
/// of them (a parent started with a closed stdin hands out descriptor 0).
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor we own.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just created.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
}

/// Clones the child on the spawner thread; returns once it has exec'd (or failed to).
type Cloned = (libc::pid_t, OwnedFd, Option<Arc<Kept>>, Option<OwnedFd>);

fn clone_child(spawn: Spawn, stack: &mut ChildStack) -> Result<Cloned, SpawnError> {
    let Spawn { program, argv, envp, stdio, mut prepared, status_read, network_watch } = spawn;
    let stdio = stdio.map(above_stdio);
    let [stdin, stdout, stderr] = stdio;
    let stdio =
        [stdin.map_err(SpawnError::Clone)?, stdout.map_err(SpawnError::Clone)?, stderr.map_err(SpawnError::Clone)?];
    let argv_ptrs = pointers(&argv);
    let envp_ptrs = pointers(&envp);
    let args = ChildArgs {
        program: program.as_ptr(),
        argv: argv_ptrs.as_ptr(),
        envp: envp_ptrs.as_ptr(),
        stdio: [stdio[0].as_raw_fd(), stdio[1].as_raw_fd(), stdio[2].as_raw_fd()],
        prepared: &prepared,
    };
    let top = stack.top().map_err(SpawnError::Clone)?;
    let mut pidfd: c_int = -1;
    // SAFETY: every signal is blocked on this thread while the child shares its memory; the
    // child runs `child_main` on its own stack; CLONE_VFORK returns only once it has exec'd or
    // exited, so `args` and everything it points to outlive its use.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            child_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
            &args as *const ChildArgs<'_> as *mut c_void,
            &mut pidfd as *mut c_int,
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return Err(SpawnError::Clone(clone_error));
        }
        pid
    };
    // SAFETY: CLONE_PIDFD stored a descriptor we now own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // The namespaces entered are held already; those the child made are opened (best effort:
    // a child that already exited has freed them itself).
    let namespace = prepared.mounts.as_mut().and_then(|plan| plan.settle(pid));
    // The child has exec'd (its copy of the status pipe closed) or exited: with our copy
    // closed too, the read below sees either its failure record or the end of the pipe.
    drop(prepared);
    drop(stdio);
    let mut record = [0u8; 5];
    // SAFETY: a read into a stack buffer; the pipe's writers are all closed, so it cannot block.
    let n = unsafe { libc::read(status_read.as_raw_fd(), record.as_mut_ptr().cast(), record.len()) };
    if n == record.len() as isize {
        let _ = reap(pid, 0); // it has exited
        let source = io::Error::from_raw_os_error(i32::from_ne_bytes([record[1], record[2], record[3], record[4]]));
        return Err(match Step::from_code(record[0]) {
            Some(Step::Exec) | None => SpawnError::Exec { program: program.to_string_lossy().into_owned(), source },
            Some(step) => SpawnError::Confine { step, source },
        });
    }
    // Sent before the exec, so waiting already (none where the machine gave no listener).
    let listener = network_watch.and_then(|channel| crate::netwatch::receive(&channel));
    Ok((pid, pidfd, namespace, listener))
}

/// Starts the child from the spawner thread.
pub(crate) async fn spawn(spawn: Spawn) -> Result<Child, SpawnError> {
    let confined = spawn.prepared.drop_capabilities;
    let spawner =
        spawner(confined).ok_or_else(|| SpawnError::Clone(io::Error::other("the spawner thread could not start")))?;
    let mut spawn = spawn;
    spawn.prepared.bounding_set_empty = confined && spawner.bounding_set_empty;
    if confined && !spawner.layered {
        // The thread could not hold the spawner layer: the child installs it first.
        let layer = crate::filter::program(crate::filter::Layer::Spawner)
            .map_err(|e| SpawnError::Clone(io::Error::other(e.to_string())))?;
        spawn.prepared.seccomp =
            Arc::new(std::iter::once(layer).chain(spawn.prepared.seccomp.iter().cloned()).collect());
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move |stack| {
        let _ = tx.send(clone_child(spawn, stack));
    });
    spawner.jobs.send(job).map_err(|_| SpawnError::Clone(io::Error::other("the spawner thread is gone")))?;
    let (pid, pidfd, namespace, listener) =
        rx.await.map_err(|_| SpawnError::Clone(io::Error::other("the spawner thread dropped a spawn")))??;
    // SAFETY: the AsyncFd owns the OwnedFd, which stays open (and the same) for its lifetime.
    let pidfd = unsafe { AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) }
        .map_err(|e| SpawnError::Clone(e.into()))?;
    let network = listener.and_then(|fd| match crate::netwatch::NetWatch::start(fd) {
        Ok(watch) => Some(watch),
        Err(e) => {
            // Dropped, the listener answers the child's internet sockets ENOSYS: refused still.
            tracing::warn!("could not watch a call's refused connections: {e}");
            None
        }
    });
    Ok(Child { pid, pidfd: Some(pidfd), namespace, network })
}

impl Child {
    pub(crate) fn id(&self) -> libc::pid_t {
        self.pid
    }

    /// The held mount namespace, for the caller to release once the call is over.
    pub(crate) fn take_network_watch(&mut self) -> Option<crate::netwatch::NetWatch> {
        self.network.take()
    }

    pub(crate) fn network_watch(&self) -> Option<&crate::netwatch::NetWatch> {
        self.network.as_ref()
    }

    pub(crate) fn take_namespace(&mut self) -> Option<Arc<Kept>> {
        self.namespace.take()
    }

    /// Waits until the child exits and reaps it. Cancel-safe.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = loop {
            let Some(pidfd) = &self.pidfd else {
                return Err(io::Error::other("the child was already reaped"));
            };
            let mut ready = pidfd.readable().await?;
            if let Some(status) = reap(self.pid, libc::WNOHANG)? {
                break status;
            }
            ready.clear_ready();
        };
        self.pidfd = None;
        Ok(status)
    }
}

/// Reaps our own child; until then its pid cannot be reused.
fn reap(pid: libc::pid_t, flags: c_int) -> io::Result<Option<ExitStatus>> {
    let mut status = 0;
    // SAFETY: waitpid on our own child into a stack value.
    let ret = unsafe { libc::waitpid(pid, &mut status, flags) };
    match ret {
        r if r < 0 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        _ => Ok(Some(ExitStatus::from_raw(status))),
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let namespace = self.namespace.take();
        let Some(pidfd) = self.pidfd.take() else {
            release_in_background(namespace);
            return;
        };
        // SAFETY: a signal through the pidfd of our own unreaped child.
        unsafe {
            libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), libc::SIGKILL, std::ptr::null::<u8>(), 0)
        };
        let pid = self.pid;
        let reap_killed = move || {
            let _ = reap(pid, 0);
            drop(pidfd);
            drop(namespace);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(reap_killed)),
            Err(_) => reap_killed(),
        }
    }
}

/// Closes held namespaces on a blocking thread (see `Child::namespace`).
pub(crate) fn release_in_background(namespace: Option<Arc<Kept>>) {
    match namespace {
        // Kept for later calls as well: letting go of this hold frees nothing.
        Some(kept) if Arc::strong_count(&kept) > 1 => drop(kept),
        Some(kept) => crate::mounts::release_in_background(kept),
        None => {}
    }
}

//! The private mount and IPC namespaces of a call (only when the kernel runs as root): every
//! mount outside the workspace and the call's temp dir read-only, secrets root could read by
//! ownership masked, a private /dev/shm, private System V IPC and POSIX message queues.
//!
//! Making such a namespace (copying the mount table, masking, marking it read-only, a new IPC
//! namespace) costs more than a plain spawn of bash on a busy machine, so a thread of its own
//! makes them ahead of calls: it keeps a namespace set up, and for each call hands out that one
//! after moving on to a fresh copy of it. The child of a call then only enters the namespaces
//! and binds its writable trees. When no namespace is ready (a burst of calls) or the
//! machine's mount table changed since, the child makes its own as before.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex};

use libc::{c_int, c_long, c_ulong};

use crate::step::Step;

/// The namespaces of a call: its own mounts and its own System V IPC and message queues, so
/// that a tool cannot attach to the shared memory or queues of processes outside the call.
const NAMESPACES: c_int = libc::CLONE_NEWNS | libc::CLONE_NEWIPC;
const AT_RECURSIVE: c_ulong = 0x8000;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
/// Namespaces kept ready.
const READY: usize = 2;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A mount namespace set up read-only and masked, and a fresh IPC namespace, for one call.
#[derive(Debug)]
pub(crate) struct Namespaces {
    pub mnt: OwnedFd,
    pub ipc: OwnedFd,
}

/// The private namespaces of one call.
#[derive(Debug)]
pub(crate) struct MountPlan {
    /// Trees that stay writable: the workspace roots and the call's temp dir.
    pub writable: Vec<CString>,
    /// Files hidden behind /dev/null: secrets that root can read by ownership alone
    /// (/etc/shadow, SSH host keys), which landlock cannot carve out of /etc.
    pub masked: Arc<[CString]>,
    /// A directory of the call bound on /dev/shm (POSIX semaphores and shared memory keep
    /// working without exposing the machine's).
    pub private_shm: Option<CString>,
    /// Namespaces made ahead by the maker; None: the child makes its own.
    pub ready: Option<Namespaces>,
}

fn check(ret: c_long) -> Result<(), i32> {
    if ret < 0 { Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)) } else { Ok(()) }
}

fn setattr(path: &CString, attr: &MountAttr) -> c_long {
    // SAFETY: mount_setattr with a C string and a struct that outlive the call.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    }
}

fn bind(source: &CString, target: &CString, flags: c_ulong) -> c_long {
    // SAFETY: mount(2) with C strings that outlive the call.
    let ret = unsafe {
        libc::mount(source.as_ptr(), target.as_ptr(), std::ptr::null(), libc::MS_BIND | flags, std::ptr::null())
    };
    ret as c_long
}

/// In a fresh mount namespace: no propagation either way, the masks, everything read-only
/// except /dev and /dev/pts as mounts (landlock decides about devices). Raw system calls only:
/// it runs in a call's child as well as on the maker thread.
fn readonly_outside(masked: &[CString]) -> Result<(), (Step, i32)> {
    let root = c"/".to_owned();
    // SAFETY: mount(2) with constant C strings.
    let private = unsafe {
        libc::mount(
            c"none".as_ptr(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    check(private as c_long).map_err(|e| (Step::MountNamespace, e))?;
    let dev_null = c"/dev/null".to_owned();
    for path in masked {
        check(bind(&dev_null, path, 0)).map_err(|e| (Step::ReadOnlyMounts, e))?;
    }
    let read_only = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
    check(setattr(&root, &read_only)).map_err(|e| (Step::ReadOnlyMounts, e))?;
    let writable = MountAttr { attr_set: 0, attr_clr: MOUNT_ATTR_RDONLY, propagation: 0, userns_fd: 0 };
    for path in [c"/dev", c"/dev/pts"] {
        // Not a mount point on this machine: nothing to keep.
        setattr(&path.to_owned(), &writable);
    }
    Ok(())
}

impl MountPlan {
    /// In the call's child, before the working directory is entered: the namespaces (made
    /// ahead, or here), then the writable trees and /dev/shm.
    pub(crate) fn enter(&self) -> Result<(), (Step, i32)> {
        match &self.ready {
            Some(ns) => {
                // SAFETY: setns on descriptors the parent holds open.
                unsafe {
                    check(libc::setns(ns.mnt.as_raw_fd(), libc::CLONE_NEWNS) as c_long)
                        .map_err(|e| (Step::MountNamespace, e))?;
                    check(libc::setns(ns.ipc.as_raw_fd(), libc::CLONE_NEWIPC) as c_long)
                        .map_err(|e| (Step::MountNamespace, e))?;
                }
            }
            None => {
                // SAFETY: unshare with constant flags.
                check(unsafe { libc::unshare(NAMESPACES) } as c_long).map_err(|e| (Step::MountNamespace, e))?;
                readonly_outside(&self.masked)?;
            }
        }
        let writable = MountAttr { attr_set: 0, attr_clr: MOUNT_ATTR_RDONLY, propagation: 0, userns_fd: 0 };
        for path in &self.writable {
            check(bind(path, path, libc::MS_REC)).map_err(|e| (Step::ReadOnlyMounts, e))?;
            check(setattr(path, &writable)).map_err(|e| (Step::ReadOnlyMounts, e))?;
        }
        if let Some(source) = &self.private_shm {
            check(bind(source, &c"/dev/shm".to_owned(), 0)).map_err(|e| (Step::ReadOnlyMounts, e))?;
        }
        Ok(())
    }
}

/// Checks once, in a throw-away child, that this machine lets us make the private namespaces
/// (a container's seccomp profile may refuse unshare even to root).
pub(crate) fn probe() -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    let program = if std::path::Path::new("/bin/true").exists() { "/bin/true" } else { "/usr/bin/true" };
    #[allow(clippy::disallowed_methods)]
    let mut cmd = std::process::Command::new(program);
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    // SAFETY: raw system calls only between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::unshare(NAMESPACES) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            readonly_outside(&[]).map_err(|(_, errno)| std::io::Error::from_raw_os_error(errno))
        });
    }
    let status = cmd.status()?;
    if status.success() { Ok(()) } else { Err(std::io::Error::other(format!("the probe exited with {status}"))) }
}

#[derive(Debug, Default)]
struct State {
    ready: Vec<Namespaces>,
    /// The machine's mount table changed: what is ready is stale.
    stale: bool,
    closed: bool,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// Makes namespaces ahead of calls on a thread of its own; stops when dropped.
#[derive(Debug)]
pub(crate) struct Maker {
    shared: Arc<Shared>,
    /// The kernel's own mount table, polled for changes (POLLPRI) before each hand-out.
    mountinfo: File,
}

impl Maker {
    pub(crate) fn start(masked: Arc<[CString]>) -> std::io::Result<Maker> {
        let mountinfo = File::open("/proc/self/mountinfo")?;
        let original = File::open("/proc/self/ns/mnt")?;
        let shared = Arc::new(Shared::default());
        let worker = shared.clone();
        std::thread::Builder::new()
            .name("superpi-sandbox-namespaces".into())
            .spawn(move || make_loop(&worker, &masked, &original))?;
        Ok(Maker { shared, mountinfo })
    }

    /// Namespaces for one call, when one is ready and still matches the machine's mounts.
    pub(crate) fn take(&self) -> Option<Namespaces> {
        let mut poll = libc::pollfd { fd: self.mountinfo.as_raw_fd(), events: libc::POLLPRI, revents: 0 };
        // SAFETY: poll on a descriptor we own, without waiting.
        let changed = unsafe { libc::poll(&mut poll, 1, 0) } > 0 && poll.revents & (libc::POLLPRI | libc::POLLERR) != 0;
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if changed {
            state.ready.clear();
            state.stale = true;
            self.shared.wake.notify_one();
            return None;
        }
        let ready = state.ready.pop();
        self.shared.wake.notify_one();
        ready
    }
}

impl Drop for Maker {
    fn drop(&mut self) {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.shared.wake.notify_one();
    }
}

fn open_own(kind: &str) -> Option<OwnedFd> {
    File::open(format!("/proc/thread-self/ns/{kind}")).ok().map(OwnedFd::from)
}

/// The maker thread: set up one namespace pair (this thread's own), then for each one handed
/// out, keep the set-up one and move this thread on to a fresh copy of it, which needs no more
/// work. Calls change only the namespaces they were handed.
fn make_loop(shared: &Shared, masked: &[CString], original: &File) {
    let mut set_up = false;
    loop {
        {
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            while !state.closed && !state.stale && state.ready.len() >= READY {
                state = shared.wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            if state.closed {
                return;
            }
            if state.stale {
                state.stale = false;
                state.ready.clear();
                set_up = false;
            }
        }
        if !set_up {
            // Start over from the machine's mount table: back into the kernel's namespace.
            // SAFETY: unshare and setns on this thread only (it shares no fs with the others
            // once it has unshared).
            let fresh = unsafe {
                libc::unshare(libc::CLONE_FS) == 0
                    && libc::setns(original.as_raw_fd(), libc::CLONE_NEWNS) == 0
                    && libc::unshare(NAMESPACES) == 0
            };
            if !fresh || readonly_outside(masked).is_err() {
                tracing::warn!("the sandbox cannot make namespaces ahead of calls: each call makes its own");
                return;
            }
            set_up = true;
        }
        let (Some(mnt), Some(ipc)) = (open_own("mnt"), open_own("ipc")) else { return };
        // SAFETY: unshare on this thread: from here on it sits in a copy of what it hands out.
        if unsafe { libc::unshare(NAMESPACES) } != 0 {
            return;
        }
        let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.stale {
            state.ready.push(Namespaces { mnt, ipc });
        }
    }
}

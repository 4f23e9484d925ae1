//! The private mount and IPC namespaces of a call: every mount outside the workspace and the
//! calls' temp dirs read-only, secrets root could read by ownership masked, a private /dev/shm,
//! private System V IPC and POSIX message queues. Landlock governs writes to files but not
//! their attributes (mode, owner, times, extended attributes): read-only mounts keep those of
//! the user's files outside the workspace. A kernel that is not root has them made inside a
//! user namespace by a helper process (`namespace_helper.rs`); calls enter them, the user
//! namespace first.
//!
//! Making such a namespace (copying the mount table, masking, marking it read-only, a new IPC
//! namespace) and tearing it down again costs more than a plain spawn of bash on a busy
//! machine, so it is done once per workspace: the first call of a workspace enters a namespace
//! a thread of its own made ahead (or makes one itself when none is ready), binds the writable
//! trees (the workspace, the directory of the calls' temp dirs, a /dev/shm of the namespace's
//! own), and that namespace is then kept for the later calls of the same writable trees, whose
//! child only enters it. Calls of one workspace thus share their /dev/shm and System V IPC as
//! they share the workspace's files; calls of different workspaces never do. Every kept
//! namespace is dropped when the machine's mount table changes, or when a workspace's
//! directory is no longer the one it was bound from.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};

use libc::{c_int, c_long, c_ulong};

use crate::step::Step;

/// The namespaces of a call: its own mounts and its own System V IPC and message queues, so
/// that a tool cannot attach to the shared memory or queues of processes outside the call.
pub(crate) const NAMESPACES: c_int = libc::CLONE_NEWNS | libc::CLONE_NEWIPC;
const AT_RECURSIVE: c_ulong = 0x8000;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
/// Namespaces kept ready.
const READY: usize = 2;
/// Namespaces kept for the workspaces last used.
const KEPT: usize = 8;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A mount namespace set up read-only and masked, and a fresh IPC namespace, for one call;
/// for a kernel that is not root, the user namespace that owns them (entered first).
#[derive(Debug)]
pub(crate) struct Namespaces {
    pub mnt: OwnedFd,
    pub ipc: OwnedFd,
    pub user: Option<OwnedFd>,
}

/// The private namespaces of one call.
#[derive(Debug)]
pub(crate) struct MountPlan {
    /// Trees to bind writable: the workspace roots and the directory of the calls' temp dirs
    /// (none when the namespace is kept from an earlier call: they are bound already).
    pub writable: Vec<CString>,
    /// Files hidden behind /dev/null: secrets that root can read by ownership alone
    /// (/etc/shadow, SSH host keys), which landlock cannot carve out of /etc.
    pub masked: Arc<[CString]>,
    /// A directory to bind on /dev/shm (POSIX semaphores and shared memory keep working
    /// without exposing the machine's); none when bound already.
    pub private_shm: Option<CString>,
    /// Namespaces to enter (kept, or made ahead by the maker); None: the child makes its own.
    pub ready: Option<Arc<Kept>>,
    /// The /dev/shm directory of namespaces the child makes itself.
    pub own_shm: Option<tempfile::TempDir>,
    /// Set up by this call for later calls of the same writable trees.
    pub keep: Option<Keep>,
}

impl MountPlan {
    /// The directory on the call's /dev/shm (landlock rules follow inodes, so the call's rule
    /// is on it).
    pub(crate) fn shm_dir(&self) -> Option<PathBuf> {
        let kept = self.ready.as_ref().and_then(|kept| kept.shm.as_ref());
        kept.or(self.own_shm.as_ref()).map(|dir| dir.path().to_path_buf())
    }

    /// Once the child has exec'd: the namespaces it runs in (kept for later calls when this
    /// call set them up), held until the call ends. A child that made its own and already
    /// exited has freed them.
    pub(crate) fn settle(&mut self, pid: libc::pid_t) -> Option<Arc<Kept>> {
        let kept = match self.ready.take() {
            Some(kept) => kept,
            None => {
                let open = |kind: &str| File::open(format!("/proc/{pid}/ns/{kind}")).ok().map(OwnedFd::from);
                let (mnt, ipc) = (open("mnt")?, open("ipc")?);
                Arc::new(Kept { namespaces: Namespaces { mnt, ipc, user: None }, shm: self.own_shm.take() })
            }
        };
        if let Some(keep) = self.keep.take() {
            keep.commit(kept.clone());
        }
        Some(kept)
    }
}

/// What identifies the writable trees of a namespace: each path with the device and inode it
/// had, so that a workspace removed and made again gets a namespace bound from the new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key(Vec<(PathBuf, u64, u64)>);

impl Key {
    /// None when a tree is missing (the call then binds what exists, and nothing is kept).
    pub(crate) fn of(paths: &[PathBuf]) -> Option<Key> {
        use std::os::unix::fs::MetadataExt;
        let identity = |p: &PathBuf| std::fs::metadata(p).ok().map(|m| (p.clone(), m.dev(), m.ino()));
        paths.iter().map(identity).collect::<Option<_>>().map(Key)
    }
}

/// Namespaces set up for one set of writable trees, with the directory bound on their
/// /dev/shm (removed after them).
#[derive(Debug)]
pub(crate) struct Kept {
    pub namespaces: Namespaces,
    pub shm: Option<tempfile::TempDir>,
}

/// Namespaces a call sets up, to be kept once its child has entered them and exec'd.
#[derive(Debug)]
pub(crate) struct Keep {
    key: Key,
    /// The mount-table generation the namespaces were made in.
    generation: u64,
    shared: Arc<Shared>,
}

pub(crate) fn check(ret: c_long) -> Result<(), i32> {
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
pub(crate) fn readonly_outside(masked: &[CString]) -> Result<(), (Step, i32)> {
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
        match self.ready.as_ref().map(|kept| &kept.namespaces) {
            Some(ns) => {
                // SAFETY: setns on descriptors the parent holds open.
                unsafe {
                    // The user namespace first: it owns the others, and the kernel's uid (its
                    // owner) has every capability in it, which entering them needs.
                    if let Some(user) = &ns.user {
                        check(libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER) as c_long)
                            .map_err(|e| (Step::MountNamespace, e))?;
                    }
                    check(libc::setns(ns.mnt.as_raw_fd(), libc::CLONE_NEWNS) as c_long)
                        .map_err(|e| (Step::MountNamespace, e))?;
                    check(libc::setns(ns.ipc.as_raw_fd(), libc::CLONE_NEWIPC) as c_long)
                        .map_err(|e| (Step::MountNamespace, e))?;
                }
            }
            None => {
                unshare().map_err(|e| (Step::MountNamespace, e))?;
                readonly_outside(&self.masked)?;
            }
        }
        bind_writable(&self.writable, self.private_shm.as_ref())
    }
}

/// Binds the writable trees on themselves, writable, and the private /dev/shm.
pub(crate) fn bind_writable(trees: &[CString], private_shm: Option<&CString>) -> Result<(), (Step, i32)> {
    let writable = MountAttr { attr_set: 0, attr_clr: MOUNT_ATTR_RDONLY, propagation: 0, userns_fd: 0 };
    for path in trees {
        check(bind(path, path, libc::MS_REC)).map_err(|e| (Step::ReadOnlyMounts, e))?;
        check(setattr(path, &writable)).map_err(|e| (Step::ReadOnlyMounts, e))?;
    }
    if let Some(source) = private_shm {
        check(bind(source, &c"/dev/shm".to_owned(), 0)).map_err(|e| (Step::ReadOnlyMounts, e))?;
    }
    Ok(())
}

/// The call's own namespaces. Raw system calls only.
fn unshare() -> Result<(), i32> {
    // SAFETY: unshare with constant flags.
    check(unsafe { libc::unshare(NAMESPACES) } as c_long)
}

/// Checks once, in a throw-away child, that this machine lets us make the private namespaces
/// (a container's seccomp profile may refuse unshare even to root; a distribution may refuse
/// unprivileged user namespaces, or grant them without the right to mount).
pub(crate) fn probe() -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    let program = if std::path::Path::new("/bin/true").exists() { "/bin/true" } else { "/usr/bin/true" };
    #[allow(clippy::disallowed_methods)]
    let mut cmd = std::process::Command::new(program);
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    // SAFETY: raw system calls only between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            unshare().map_err(std::io::Error::from_raw_os_error)?;
            readonly_outside(&[]).map_err(|(_, errno)| std::io::Error::from_raw_os_error(errno))
        });
    }
    let status = cmd.status()?;
    if status.success() { Ok(()) } else { Err(std::io::Error::other(format!("the probe exited with {status}"))) }
}

#[derive(Debug, Default)]
struct State {
    ready: Vec<Namespaces>,
    /// Namespaces set up for writable trees, the latest used last.
    kept: Vec<(Key, Arc<Kept>)>,
    /// Counts the changes of the machine's mount table seen.
    generation: u64,
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
    /// With `ahead`, a thread makes namespaces ahead of calls; without (a kernel that is not
    /// root: a process of several threads cannot make a user namespace), each workspace's
    /// first call makes them and the later ones enter them.
    pub(crate) fn start(masked: Arc<[CString]>, ahead: bool) -> std::io::Result<Maker> {
        let mountinfo = File::open("/proc/self/mountinfo")?;
        let shared = Arc::new(Shared::default());
        if ahead {
            let original = File::open("/proc/self/ns/mnt")?;
            let worker = shared.clone();
            std::thread::Builder::new()
                .name("superpi-sandbox-namespaces".into())
                .spawn(move || make_loop(&worker, &masked, &original))?;
        }
        Ok(Maker { shared, mountinfo })
    }

    /// The namespaces of one call with these writable trees: kept from an earlier call, or
    /// fresh ones made ahead (or none: the child makes its own) that this call sets up and
    /// keeps. Nothing is kept when the machine's mount table just changed.
    pub(crate) fn for_call(&self, key: Option<Key>) -> Entry {
        let mut poll = libc::pollfd { fd: self.mountinfo.as_raw_fd(), events: libc::POLLPRI, revents: 0 };
        // SAFETY: poll on a descriptor we own, without waiting.
        let changed = unsafe { libc::poll(&mut poll, 1, 0) } > 0 && poll.revents & (libc::POLLPRI | libc::POLLERR) != 0;
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if changed {
            state.ready.clear();
            let stale = std::mem::take(&mut state.kept);
            state.generation += 1;
            state.stale = true;
            self.shared.wake.notify_one();
            drop(state);
            release_in_background(stale);
            return Entry::Fresh { ready: None, keep: None };
        }
        if let Some(key) = &key
            && let Some(at) = state.kept.iter().position(|(k, _)| k == key)
        {
            let entry = state.kept.remove(at);
            let kept = entry.1.clone();
            state.kept.push(entry);
            return Entry::Kept(kept);
        }
        let ready = state.ready.pop();
        let generation = state.generation;
        self.shared.wake.notify_one();
        drop(state);
        let keep = key.map(|key| Keep { key, generation, shared: self.shared.clone() });
        Entry::Fresh { ready, keep }
    }
}

impl Drop for Maker {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.closed = true;
        let kept = std::mem::take(&mut state.kept);
        drop(state);
        self.shared.wake.notify_one();
        release_in_background(kept);
    }
}

/// The namespaces a call gets (see [`Maker::for_call`]).
#[derive(Debug)]
pub(crate) enum Entry {
    Kept(Arc<Kept>),
    Fresh { ready: Option<Namespaces>, keep: Option<Keep> },
}

impl Keep {
    /// Keeps the namespaces the call's child set up, unless the mount table changed since they
    /// were made or another call kept some for the same trees first.
    pub(crate) fn commit(self, kept: Arc<Kept>) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.generation != self.generation || state.closed || state.kept.iter().any(|(k, _)| *k == self.key) {
            return;
        }
        state.kept.push((self.key, kept));
        let evicted = if state.kept.len() > KEPT { Some(state.kept.remove(0)) } else { None };
        drop(state);
        release_in_background(evicted);
    }
}

/// Drops namespaces (and their /dev/shm) on a blocking thread: freeing a mount namespace
/// waits for an RCU grace period, which no call should wait for.
pub(crate) fn release_in_background<T: Send + 'static>(held: T) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn_blocking(move || drop(held))),
        Err(_) => drop(held),
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
            state.ready.push(Namespaces { mnt, ipc, user: None });
        }
    }
}

//! A pids cgroup per call: bounds the number of processes (RLIMIT_NPROC does nothing for root)
//! and finds every descendant at the end of a call, also one that left the session.
//!
//! A call's cgroup, once every process in it has exited, goes back to a small pool for a later
//! call instead of being removed: making and removing one costs more than the rest of the
//! launcher's own work together.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// Most empty call cgroups kept for reuse.
const POOL_MAX: usize = 16;

/// Empty call cgroups ready for reuse (each with the descriptor the child joins by still
/// open), removed when the sandbox goes away.
#[derive(Debug, Default)]
struct Pool(Mutex<Vec<(PathBuf, Arc<OwnedFd>)>>);

impl Pool {
    fn take(&self) -> Option<(PathBuf, Arc<OwnedFd>)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    /// Keeps `dir` when there is room; otherwise it is removed.
    fn put(&self, dir: PathBuf, procs: Arc<OwnedFd>) {
        let mut free = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < POOL_MAX {
            free.push((dir, procs));
        } else {
            drop(free);
            let _ = fs::remove_dir(&dir);
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for (dir, _) in self.0.get_mut().unwrap_or_else(|e| e.into_inner()).drain(..) {
            let _ = fs::remove_dir(dir);
        }
    }
}

/// Where this kernel may create per-call cgroups.
#[derive(Debug, Clone)]
pub(crate) struct CgroupBase {
    dir: PathBuf,
    v2: bool,
    /// Whether the pids controller bounds the process count.
    pids: bool,
    pool: Arc<Pool>,
}

impl CgroupBase {
    /// Finds a writable pids hierarchy (cgroup v1 `pids`, or v2 with the pids controller
    /// usable below our own cgroup). None when there is none: the sandbox then falls back to
    /// killing the process group only.
    pub(crate) fn detect() -> Option<CgroupBase> {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
        let own = fs::read_to_string("/proc/self/cgroup").ok()?;
        let mut v1 = None;
        let mut v2 = None;
        for line in mountinfo.lines() {
            let Some((left, right)) = line.split_once(" - ") else { continue };
            let mount_point = left.split(' ').nth(4).unwrap_or("");
            let mut r = right.split(' ');
            let fstype = r.next().unwrap_or("");
            let super_opts = r.nth(1).unwrap_or("");
            if fstype == "cgroup" && super_opts.split(',').any(|o| o == "pids") {
                v1 = Some(PathBuf::from(mount_point));
            } else if fstype == "cgroup2" && v2.is_none() {
                v2 = Some(PathBuf::from(mount_point));
            }
        }
        for line in own.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let rel = path.trim_start_matches('/');
            if let Some(mount) = &v1
                && controllers.split(',').any(|c| c == "pids")
            {
                let dir = mount.join(rel);
                if writable_dir(&dir) {
                    return Some(CgroupBase { dir, v2: false, pids: true, pool: Arc::default() });
                }
            }
            if let Some(mount) = &v2
                && controllers.is_empty()
            {
                // Without the pids controller (a delegated user cgroup that holds processes
                // cannot enable it) a child cgroup still finds and kills every process.
                let dir = mount.join(rel);
                let controllers = fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
                let pids = controllers.split_whitespace().any(|c| c == "pids")
                    || fs::write(dir.join("cgroup.subtree_control"), "+pids").is_ok();
                if writable_dir(&dir) && fs::metadata(dir.join("cgroup.procs")).is_ok() {
                    return Some(CgroupBase { dir, v2: true, pids, pool: Arc::default() });
                }
            }
        }
        None
    }

    pub(crate) fn bounds_pids(&self) -> bool {
        self.pids
    }

    /// Removes the call cgroups of kernels that are gone (a crash leaves them behind).
    pub(crate) fn remove_stale(&self) {
        let Ok(dir) = fs::read_dir(&self.dir) else { return };
        for entry in dir.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("superpi-").and_then(|r| r.split('-').next()) else { continue };
            if Path::new("/proc").join(pid).exists() {
                continue;
            }
            for pid in pids(&entry.path()) {
                // SAFETY: kill(2) on a pid read from a call cgroup of a kernel that is gone.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            // Empty now, or once those killed are gone (a later start removes it then).
            let _ = fs::remove_dir(entry.path());
        }
    }

    /// An empty cgroup for one call, bounded to `max_pids` processes (one kernel has one
    /// bound, so a reused cgroup keeps the one it was made with).
    pub(crate) fn create(&self, max_pids: u32) -> std::io::Result<CallCgroup> {
        let pool = Some(self.pool.clone());
        if let Some((dir, procs)) = self.pool.take() {
            return Ok(CallCgroup { dir, v2: self.v2, pool, procs });
        }
        // A kernel killed outright leaves its cgroups behind, and its pid may come again: a
        // name taken is skipped.
        let dir = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = self.dir.join(format!("superpi-{}-{n}", std::process::id()));
            match fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1_000_000 => continue,
                Err(e) => return Err(e),
            }
        };
        // The child joins by writing "0": on v1 to `tasks`, which moves the calling thread only
        // (the child has no other) and so does not take the kernel-wide threadgroup lock, whose
        // writers wait for an RCU grace period (milliseconds) unless another took it moments
        // before; `cgroup.procs` moves a whole process and takes it. v2 has only cgroup.procs.
        let join = if self.v2 { "cgroup.procs" } else { "tasks" };
        let procs = match fs::OpenOptions::new().write(true).open(dir.join(join)) {
            Ok(file) => Arc::new(OwnedFd::from(file)),
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                return Err(e);
            }
        };
        let cg = CallCgroup { dir, v2: self.v2, pool, procs };
        if self.pids {
            fs::write(cg.dir.join("pids.max"), max_pids.to_string())?;
        }
        Ok(cg)
    }
}

/// The processes of a cgroup.
fn pids(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn writable_dir(dir: &Path) -> bool {
    let probe = dir.join(format!("superpi-probe-{}", std::process::id()));
    let ok = fs::create_dir(&probe).is_ok();
    let _ = fs::remove_dir(&probe);
    ok
}

impl Drop for CallCgroup {
    fn drop(&mut self) {
        // A call that never started, or a stale cgroup: best effort; `destroy` has usually
        // emptied it and handed it back already.
        if !self.dir.as_os_str().is_empty() {
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

/// The cgroup of one call; emptied and handed back (or removed) by [`CallCgroup::destroy`].
#[derive(Debug)]
pub(crate) struct CallCgroup {
    dir: PathBuf,
    v2: bool,
    /// Where it goes back once empty (None: removed).
    pool: Option<Arc<Pool>>,
    /// Write-only on the file the child joins by with `write("0")` (`tasks` on v1).
    procs: Arc<OwnedFd>,
}

impl CallCgroup {
    /// A write-only descriptor the child joins the cgroup by, with `write("0")`.
    pub(crate) fn procs_fd(&self) -> Arc<OwnedFd> {
        self.procs.clone()
    }

    /// Sends `signal` to every process of the call.
    pub(crate) fn signal_all(&self, signal: i32) {
        for pid in pids(&self.dir) {
            // SAFETY: kill(2) on a pid read from the call's own cgroup.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// Whether no task is left in it, not even one on its way out: v2 reports it in
    /// cgroup.events; in v1 a task leaves `tasks` once it is past the point where it could run
    /// code (its files, memory and namespaces are gone).
    fn is_empty(&self) -> bool {
        if self.v2 {
            fs::read_to_string(self.dir.join("cgroup.events")).is_ok_and(|e| e.lines().any(|l| l == "populated 0"))
        } else {
            fs::read_to_string(self.dir.join("tasks")).is_ok_and(|t| t.trim().is_empty())
        }
    }

    /// Kills everything left in the cgroup, waits (bounded) until it is empty, and hands it
    /// back to the pool (or removes it). False when something was still in it at the end.
    pub(crate) async fn destroy(mut self) -> bool {
        let start = Instant::now();
        if self.v2 {
            let _ = fs::write(self.dir.join("cgroup.kill"), "1");
        }
        // Most calls end with their leader, which is reaped: nothing left to signal.
        let mut empty = self.is_empty();
        loop {
            if !empty {
                self.signal_all(libc::SIGKILL);
                empty = self.is_empty();
            }
            if empty {
                let dir = std::mem::take(&mut self.dir);
                match self.pool.take() {
                    Some(pool) => pool.put(dir, self.procs.clone()),
                    None => {
                        let _ = fs::remove_dir(&dir);
                    }
                }
                return true;
            }
            if start.elapsed() > Duration::from_secs(5) {
                tracing::warn!(dir = %self.dir.display(), "could not remove a call's cgroup");
                return false;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

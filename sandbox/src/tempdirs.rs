//! The private temp dirs of calls, made ahead: creating a directory on a disk-backed /tmp costs
//! a fifth of a millisecond on a busy machine, on every call's path otherwise. A couple are kept
//! ready; each is used by one call at a time, emptied after it and kept for a later call (or
//! removed when something of the call may have survived it). They live in one directory per sandbox (the root), which a call's mount
//! namespace makes writable once for every call of a workspace (landlock then grants each call
//! its own dir only). The root's name carries the kernel's pid, so that what a kernel leaves when
//! it exits is removed by the next one.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::policy::RulesetKey;

/// Temp dirs kept ready (a call gives its own back on a blocking thread, sometimes only after
/// the next call has taken one).
const READY: usize = 4;

/// One call's temp dir (also its `TMPDIR`), removed when dropped.
#[derive(Debug)]
pub(crate) struct CallDir {
    _dir: tempfile::TempDir,
    /// Its canonical path.
    pub path: PathBuf,
    /// The landlock ruleset made for the rules of the last call that used this dir (with it as
    /// the temp dir): the next call with the same rules uses it again.
    pub ruleset: Option<(RulesetKey, Arc<OwnedFd>)>,
}

/// Removes everything in `dir` and gives it its first mode back (a call may have changed it).
fn empty(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

#[derive(Debug)]
pub(crate) struct TempDirs {
    ready: Mutex<Vec<CallDir>>,
    /// Holds every call's dir and the private /dev/shm dirs of mount namespaces.
    _root: tempfile::TempDir,
    /// The canonical path of `root`.
    root_path: PathBuf,
}

impl TempDirs {
    pub(crate) fn new() -> std::io::Result<Arc<TempDirs>> {
        remove_stale();
        let root = tempfile::Builder::new().prefix(&format!("{ROOT_PREFIX}{}-", std::process::id())).tempdir()?;
        let root_path = root.path().canonicalize()?;
        Ok(Arc::new(TempDirs { ready: Mutex::new(Vec::new()), _root: root, root_path }))
    }

    /// The canonical path of the directory that holds every call's temp dir.
    pub(crate) fn root(&self) -> &Path {
        &self.root_path
    }

    /// A temp dir for one call: a ready one, or a new one; when none is left ready, another is
    /// made on a blocking thread.
    pub(crate) fn take(self: &Arc<Self>) -> Result<CallDir, String> {
        let (taken, left) = {
            let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
            (ready.pop(), ready.len())
        };
        if left == 0
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let dirs = self.clone();
            drop(handle.spawn_blocking(move || {
                if let Ok(dir) = dirs.make() {
                    dirs.keep(dir);
                }
            }));
        }
        match taken {
            Some(dir) => Ok(dir),
            None => self.make(),
        }
    }

    /// A call's dir once the call is over, on a blocking thread: emptied and kept ready for
    /// another call (with its ruleset) when nothing of the call can still reach it
    /// (`contained`: its cgroup was emptied), else removed. Reusing spares the disk's file
    /// system a directory made and one removed per call, whose inode allocation slows as
    /// deleted inodes pile up, and the call the making of its ruleset.
    pub(crate) fn give_back(self: &Arc<Self>, dir: CallDir, contained: bool) {
        let dirs = self.clone();
        let job = move || {
            if contained && empty(&dir.path).is_ok() {
                dirs.keep(dir);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(job)),
            Err(_) => job(),
        }
    }

    /// Keeps `dir` ready when there is room; otherwise it is removed.
    fn keep(&self, dir: CallDir) {
        let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
        if ready.len() < READY {
            ready.push(dir);
        }
    }

    fn make(&self) -> Result<CallDir, String> {
        let dir = tempfile::Builder::new()
            .prefix(CALL_PREFIX)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(&self.root_path)
            .map_err(|e| format!("could not create the call's temp dir: {e}"))?;
        let path = self.root_path.join(dir.path().file_name().unwrap_or_default());
        Ok(CallDir { _dir: dir, path, ruleset: None })
    }

    /// A directory to bind on /dev/shm in a mount namespace (world-writable and sticky, as
    /// /dev/shm is), removed when dropped.
    pub(crate) fn make_shm(&self) -> Result<tempfile::TempDir, String> {
        let dir = tempfile::Builder::new()
            .prefix("shm-")
            .tempdir_in(&self.root_path)
            .map_err(|e| format!("could not create a private /dev/shm: {e}"))?;
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o1777))
            .map_err(|e| format!("could not create a private /dev/shm: {e}"))?;
        Ok(dir)
    }
}

/// The directory of one sandbox's calls: `superpi-calls-PID-XXXXXX` in the system temp dir.
const ROOT_PREFIX: &str = "superpi-calls-";
/// A call's own dir inside it.
const CALL_PREFIX: &str = "superpi-call-";

/// Removes the temp dirs of kernels that are gone (also those of builds that put each call's
/// dir straight in the system temp dir, `superpi-call-PID-XXXXXX`).
fn remove_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rest = name.strip_prefix(ROOT_PREFIX).or_else(|| name.strip_prefix(CALL_PREFIX));
        let Some(pid) = rest.and_then(|rest| rest.split_once('-')).map(|(pid, _)| pid) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn emptying_removes_links_without_following_them() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "kept").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        std::fs::create_dir_all(dir.path().join("sub/deeper")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("sub/link")).unwrap();
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        empty(dir.path()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(dir.path()).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(std::fs::read_to_string(outside.path().join("keep")).unwrap(), "kept");
    }
}

//! The private temp dirs of calls, made ahead: creating a directory on a disk-backed /tmp costs
//! a fifth of a millisecond on a busy machine, on every call's path otherwise. A couple are kept
//! ready and replaced on a blocking thread as calls take them; each is used by one call only and
//! removed after it. They live in one directory per sandbox (the root), which a call's mount
//! namespace makes writable once for every call of a workspace (landlock then grants each call
//! its own dir only). The root's name carries the kernel's pid, so that what a kernel leaves when
//! it exits is removed by the next one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Temp dirs kept ready.
const READY: usize = 2;

/// One call's temp dir (also its `TMPDIR`).
#[derive(Debug)]
pub(crate) struct CallDir {
    pub dir: tempfile::TempDir,
    /// The canonical path of `dir`.
    pub path: PathBuf,
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

    /// A temp dir for one call: a ready one, or a new one; either way another is made ready.
    pub(crate) fn take(self: &Arc<Self>) -> Result<CallDir, String> {
        let ready = self.ready.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let dirs = self.clone();
            drop(handle.spawn_blocking(move || {
                if let Ok(dir) = dirs.make() {
                    let mut ready = dirs.ready.lock().unwrap_or_else(|e| e.into_inner());
                    if ready.len() < READY {
                        ready.push(dir);
                    }
                }
            }));
        }
        match ready {
            Some(dir) => Ok(dir),
            None => self.make(),
        }
    }

    fn make(&self) -> Result<CallDir, String> {
        let dir = tempfile::Builder::new()
            .prefix(CALL_PREFIX)
            .tempdir_in(&self.root_path)
            .map_err(|e| format!("could not create the call's temp dir: {e}"))?;
        let path = self.root_path.join(dir.path().file_name().unwrap_or_default());
        Ok(CallDir { dir, path })
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

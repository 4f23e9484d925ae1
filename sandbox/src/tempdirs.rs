//! The private temp dirs of calls, made ahead: creating a directory (and the /dev/shm directory
//! inside it) on a disk-backed /tmp costs a fifth of a millisecond on a busy machine, on every
//! call's path otherwise. A couple are kept ready and replaced on a blocking thread as calls
//! take them; each is used by one call only and removed after it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Temp dirs kept ready.
const READY: usize = 2;

/// One call's temp dir (also its `TMPDIR`), and the directory bound on /dev/shm in the call's
/// mount namespace, when it has one.
#[derive(Debug)]
pub(crate) struct CallDir {
    pub dir: tempfile::TempDir,
    /// The canonical path of `dir`.
    pub path: PathBuf,
    pub shm: Option<PathBuf>,
}

#[derive(Debug)]
pub(crate) struct TempDirs {
    ready: Mutex<Vec<CallDir>>,
    /// Whether calls get a private /dev/shm (a directory of their temp dir).
    shm: bool,
}

impl TempDirs {
    pub(crate) fn new(shm: bool) -> Arc<TempDirs> {
        Arc::new(TempDirs { ready: Mutex::new(Vec::new()), shm })
    }

    /// A temp dir for one call: a ready one, or a new one; either way another is made ready.
    pub(crate) fn take(self: &Arc<Self>) -> Result<CallDir, String> {
        let ready = self.ready.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let dirs = self.clone();
            drop(handle.spawn_blocking(move || {
                if let Ok(dir) = make(dirs.shm) {
                    let mut ready = dirs.ready.lock().unwrap_or_else(|e| e.into_inner());
                    if ready.len() < READY {
                        ready.push(dir);
                    }
                }
            }));
        }
        match ready {
            Some(dir) => Ok(dir),
            None => make(self.shm),
        }
    }
}

fn make(shm: bool) -> Result<CallDir, String> {
    let dir = tempfile::Builder::new()
        .prefix("superpi-call-")
        .tempdir()
        .map_err(|e| format!("could not create the call's temp dir: {e}"))?;
    let path = dir.path().canonicalize().map_err(|e| e.to_string())?;
    let shm = if shm && Path::new("/dev/shm").is_dir() {
        let shm = path.join("shm");
        std::fs::create_dir(&shm).map_err(|e| format!("could not create the call's /dev/shm: {e}"))?;
        let _ = std::fs::set_permissions(&shm, std::os::unix::fs::PermissionsExt::from_mode(0o1777));
        Some(shm)
    } else {
        None
    };
    Ok(CallDir { dir, path, shm })
}

//! The private temp dirs of calls, made ahead: creating a directory (and the /dev/shm directory
//! inside it) on a disk-backed /tmp costs a fifth of a millisecond on a busy machine, on every
//! call's path otherwise. A couple are kept ready and replaced on a blocking thread as calls
//! take them; each is used by one call only and removed after it. Their names carry the
//! kernel's pid, so that those a kernel leaves ready when it exits are removed by the next one.

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
        remove_stale();
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

const PREFIX: &str = "superpi-call-";

/// Removes the temp dirs of kernels that are gone.
fn remove_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(PREFIX).and_then(|rest| rest.split_once('-')).map(|(pid, _)| pid) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn make(shm: bool) -> Result<CallDir, String> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
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

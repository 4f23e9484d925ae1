//! Waiting for a stopping kernel to let go of its data directory. Where the kernel's files
//! are ([`Locations`]) is superpi-proto's, shared with the kernel.

use std::path::Path;
use std::time::{Duration, Instant};

use superpi_proto::Locations;

use crate::ClientError;

/// Waits until the kernel that holds this data directory's lock now has let go of it, for at
/// most `timeout`: until no kernel holds it, or another kernel does (the lock file names its
/// pid). A kernel releases it last, after removing its socket: a stopped kernel is gone. Why
/// not "until it is free": two frontends replacing one kernel at once both wait, and the first
/// to see it free starts the next kernel, which the other would then wait out to its timeout.
pub(crate) async fn wait_for_release(locations: &Locations, timeout: Duration) -> Result<(), ClientError> {
    let path = locations.lock_path();
    let stopping = holder(&path);
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(2);
    while is_locked(&path)? && (stopping.is_none() || holder(&path) == stopping) {
        if Instant::now() >= deadline {
            return Err(ClientError::NoKernel(format!(
                "the stopping kernel still holds {} after {timeout:?}",
                path.display()
            )));
        }
        // Polling a lock that a dying process is about to release: back off up to 50 ms.
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(50));
    }
    Ok(())
}

/// The pid the kernel holding `path` wrote into it.
fn holder(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether a kernel holds `path` (its flock). Taking the lock to find out releases it at once.
pub(crate) fn is_locked(path: &Path) -> Result<bool, ClientError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err.into()),
    };
    match file.try_lock() {
        Ok(()) => Ok(false),
        Err(std::fs::TryLockError::WouldBlock) => Ok(true),
        Err(std::fs::TryLockError::Error(err)) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_held_lock_is_waited_for_and_a_free_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let locations = Locations {
            data_dir: dir.path().to_path_buf(),
            config_dir: dir.path().to_path_buf(),
            runtime_dir: dir.path().to_path_buf(),
            workspaces_dir: dir.path().join("workspaces"),
        };
        wait_for_release(&locations, Duration::from_millis(10)).await.unwrap();
        let held = std::fs::File::create(locations.lock_path()).unwrap();
        held.lock().unwrap();
        assert!(wait_for_release(&locations, Duration::from_millis(30)).await.is_err());
        drop(held);
        wait_for_release(&locations, Duration::from_millis(30)).await.unwrap();
    }

    #[tokio::test]
    async fn a_lock_another_kernel_took_meanwhile_ends_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let locations = Locations {
            data_dir: dir.path().to_path_buf(),
            config_dir: dir.path().to_path_buf(),
            runtime_dir: dir.path().to_path_buf(),
            workspaces_dir: dir.path().join("workspaces"),
        };
        std::fs::write(locations.lock_path(), "111\n").unwrap();
        let held = std::fs::File::open(locations.lock_path()).unwrap();
        held.lock().unwrap();
        // The stopping kernel (111) still holds it: waited for.
        assert!(wait_for_release(&locations, Duration::from_millis(30)).await.is_err());
        // The next kernel (222) holds it now, started by another frontend: the wait ends.
        let waiting = tokio::spawn({
            let locations = locations.clone();
            async move { wait_for_release(&locations, Duration::from_secs(30)).await }
        });
        // (This runtime has one thread: the wait reads the holder up to its first sleep.)
        tokio::task::yield_now().await;
        std::fs::write(locations.lock_path(), "222\n").unwrap();
        waiting.await.unwrap().unwrap();
    }
}

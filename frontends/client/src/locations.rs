//! Where superpi keeps its data, configuration and socket.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::ClientError;

/// The three directories every `superpi` subcommand shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// SQLite file and spill files. `SUPERPI_DATA_DIR`, else `$XDG_DATA_HOME/superpi`, else
    /// `~/.local/share/superpi`.
    pub data_dir: PathBuf,
    /// settings.json, harnesses. `SUPERPI_CONFIG_DIR`, else `$XDG_CONFIG_HOME/superpi`, else
    /// `~/.config/superpi`.
    pub config_dir: PathBuf,
    /// The kernel socket. `SUPERPI_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/superpi`, else
    /// `DATA_DIR/run`.
    pub runtime_dir: PathBuf,
}

impl Locations {
    /// Resolves the locations from the environment.
    pub fn from_env() -> Self {
        Self::resolve(|name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from))
    }

    /// Resolves the locations from a variable lookup (tests pass a map).
    pub fn resolve(var: impl Fn(&str) -> Option<PathBuf>) -> Self {
        let home = var("HOME").unwrap_or_else(|| PathBuf::from("/tmp"));
        let data_dir = var("SUPERPI_DATA_DIR")
            .or_else(|| var("XDG_DATA_HOME").map(|d| d.join("superpi")))
            .unwrap_or_else(|| home.join(".local/share/superpi"));
        let config_dir = var("SUPERPI_CONFIG_DIR")
            .or_else(|| var("XDG_CONFIG_HOME").map(|d| d.join("superpi")))
            .unwrap_or_else(|| home.join(".config/superpi"));
        let runtime_dir = var("SUPERPI_RUNTIME_DIR")
            .or_else(|| var("XDG_RUNTIME_DIR").map(|d| d.join("superpi")))
            .unwrap_or_else(|| data_dir.join("run"));
        Locations { data_dir, config_dir, runtime_dir }
    }

    pub fn socket_path(&self) -> PathBuf {
        self.runtime_dir.join("kernel.sock")
    }

    pub fn lock_path(&self) -> PathBuf {
        self.data_dir.join("kernel.lock")
    }

    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("superpi.sqlite")
    }

    /// Where an autostarted kernel writes its log.
    pub fn kernel_log_path(&self) -> PathBuf {
        self.data_dir.join("kernel.log")
    }

    pub fn with_data_dir(mut self, dir: &Path) -> Self {
        self.data_dir = dir.to_path_buf();
        self
    }

    /// Waits until no kernel holds this data directory's lock, for at most `timeout`. A
    /// kernel releases it last, after removing its socket: a stopped kernel is gone.
    pub(crate) async fn wait_for_release(&self, timeout: Duration) -> Result<(), ClientError> {
        let deadline = Instant::now() + timeout;
        let mut delay = Duration::from_millis(2);
        while is_locked(&self.lock_path())? {
            if Instant::now() >= deadline {
                return Err(ClientError::NoKernel(format!(
                    "the stopping kernel still holds {} after {timeout:?}",
                    self.lock_path().display()
                )));
            }
            // Polling a lock that a dying process is about to release: back off up to 50 ms.
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(50));
        }
        Ok(())
    }
}

/// Whether a kernel holds `path` (its flock). Taking the lock to find out releases it at once.
fn is_locked(path: &Path) -> Result<bool, ClientError> {
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
    use std::collections::HashMap;

    fn resolve(vars: &[(&str, &str)]) -> Locations {
        let map: HashMap<String, PathBuf> = vars.iter().map(|(k, v)| (k.to_string(), PathBuf::from(v))).collect();
        Locations::resolve(|name| map.get(name).cloned())
    }

    #[test]
    fn superpi_variables_win() {
        let l = resolve(&[
            ("HOME", "/h"),
            ("SUPERPI_DATA_DIR", "/d"),
            ("SUPERPI_CONFIG_DIR", "/c"),
            ("SUPERPI_RUNTIME_DIR", "/r"),
            ("XDG_RUNTIME_DIR", "/x"),
        ]);
        assert_eq!(l.data_dir, PathBuf::from("/d"));
        assert_eq!(l.config_dir, PathBuf::from("/c"));
        assert_eq!(l.socket_path(), PathBuf::from("/r/kernel.sock"));
    }

    #[tokio::test]
    async fn a_held_lock_is_waited_for_and_a_free_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let locations = Locations {
            data_dir: dir.path().to_path_buf(),
            config_dir: dir.path().to_path_buf(),
            runtime_dir: dir.path().to_path_buf(),
        };
        locations.wait_for_release(Duration::from_millis(10)).await.unwrap();
        let held = std::fs::File::create(locations.lock_path()).unwrap();
        held.lock().unwrap();
        assert!(locations.wait_for_release(Duration::from_millis(30)).await.is_err());
        drop(held);
        locations.wait_for_release(Duration::from_millis(30)).await.unwrap();
    }

    #[test]
    fn xdg_then_home_defaults() {
        let l = resolve(&[("HOME", "/h"), ("XDG_RUNTIME_DIR", "/run/user/1")]);
        assert_eq!(l.data_dir, PathBuf::from("/h/.local/share/superpi"));
        assert_eq!(l.config_dir, PathBuf::from("/h/.config/superpi"));
        assert_eq!(l.runtime_dir, PathBuf::from("/run/user/1/superpi"));
        let l = resolve(&[("HOME", "/h")]);
        assert_eq!(l.runtime_dir, PathBuf::from("/h/.local/share/superpi/run"));
    }
}

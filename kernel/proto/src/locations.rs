//! Where a kernel and its frontends agree the kernel's files are: three directories from the
//! environment, and below them the socket, the lock file (`kernel.lock`), the store and the
//! autostarted kernel's log. The one place these names are written.

use std::path::{Path, PathBuf};

/// The exit status of `superpi kernel` when another kernel holds the data directory's lock: a
/// frontend that started it lost a race and follows the holder instead of reporting a failure.
pub const KERNEL_EXIT_LOCK_HELD: u8 = 3;

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

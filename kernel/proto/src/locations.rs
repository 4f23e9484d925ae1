//! Where a kernel and its frontends agree the kernel's files are: four directories from the
//! environment, and below them the socket, the lock file (`kernel.lock`), the store, the
//! autostarted kernel's log and the managed workspaces. The one place these names are written.

use std::path::{Path, PathBuf};

/// The exit status of `superpi kernel` when another kernel holds the data directory's lock: a
/// frontend that started it lost a race and follows the holder instead of reporting a failure.
pub const KERNEL_EXIT_LOCK_HELD: u8 = 3;

/// The directories every `superpi` subcommand shares.
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
    /// The kernel-managed workspaces (`scratch/ID`, `shared/NAME`): outside the data dir, which
    /// no tool may touch. `SUPERPI_WORKSPACES_DIR`, else `$XDG_STATE_HOME/superpi/workspaces`,
    /// else `~/.local/state/superpi/workspaces`.
    pub workspaces_dir: PathBuf,
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
        let workspaces_dir = var("SUPERPI_WORKSPACES_DIR")
            .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("superpi/workspaces")))
            .unwrap_or_else(|| home.join(".local/state/superpi/workspaces"));
        Locations { data_dir, config_dir, runtime_dir, workspaces_dir }
    }

    /// All four directories below `root` (`data`, `config`, `run`, `workspaces`): tests'.
    pub fn under(root: &Path) -> Self {
        Locations {
            data_dir: root.join("data"),
            config_dir: root.join("config"),
            runtime_dir: root.join("run"),
            workspaces_dir: root.join("workspaces"),
        }
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
            ("SUPERPI_WORKSPACES_DIR", "/w"),
            ("XDG_RUNTIME_DIR", "/x"),
            ("XDG_STATE_HOME", "/s"),
        ]);
        assert_eq!(l.workspaces_dir, PathBuf::from("/w"));
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
        assert_eq!(l.workspaces_dir, PathBuf::from("/h/.local/state/superpi/workspaces"));
        let l = resolve(&[("HOME", "/h"), ("XDG_STATE_HOME", "/s")]);
        assert_eq!(l.workspaces_dir, PathBuf::from("/s/superpi/workspaces"));
    }
}

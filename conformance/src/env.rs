//! Private directories for one protocol's run: its own kernel (data, config and runtime
//! directories), a workspace with a known file, and a HOME. Dropping it stops the kernel that
//! a frontend started there and removes the directories.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tempfile::TempDir;

pub struct RunEnv {
    root: TempDir,
}

impl RunEnv {
    pub fn new(protocol: &str) -> Result<Self> {
        let root = tempfile::Builder::new()
            .prefix(&format!("superpi-conformance-{protocol}-"))
            .tempdir()
            .context("creating a temporary directory")?;
        let env = RunEnv { root };
        for dir in [env.data(), env.config(), env.runtime(), env.workspace(), env.home()] {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(env.workspace().join("hello.txt"), "hello from the workspace\n")
            .context("writing the workspace file")?;
        Ok(env)
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }
    pub fn data(&self) -> PathBuf {
        self.dir("data")
    }
    pub fn config(&self) -> PathBuf {
        self.dir("config")
    }
    pub fn runtime(&self) -> PathBuf {
        self.dir("run")
    }
    pub fn workspace(&self) -> PathBuf {
        self.dir("ws")
    }
    pub fn home(&self) -> PathBuf {
        self.dir("home")
    }
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The variables every process of this run gets.
    pub fn vars(&self) -> Vec<(String, String)> {
        let s = |p: PathBuf| p.to_string_lossy().into_owned();
        vec![
            ("SUPERPI_DATA_DIR".into(), s(self.data())),
            ("SUPERPI_CONFIG_DIR".into(), s(self.config())),
            ("SUPERPI_RUNTIME_DIR".into(), s(self.runtime())),
            ("SUPERPI_WORKSPACES_DIR".into(), s(self.dir("workspaces"))),
            ("HOME".into(), s(self.home())),
            ("CONFORMANCE_WORKSPACE".into(), s(self.workspace())),
        ]
    }

    /// Stops the kernel a frontend autostarted in this run's data directory, if any: SIGTERM,
    /// then SIGKILL after two seconds.
    fn stop_kernel(&self) {
        let Ok(text) = std::fs::read_to_string(self.data().join("kernel.lock")) else {
            return;
        };
        let Ok(raw) = text.trim().parse::<i32>() else {
            return;
        };
        let pid = Pid::from_raw(raw);
        if raw <= 1 || kill(pid, Signal::SIGTERM).is_err() {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if !alive(raw) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = kill(pid, Signal::SIGKILL);
    }
}

/// A pid is alive when /proc has it and it is not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

impl Drop for RunEnv {
    fn drop(&mut self) {
        self.stop_kernel();
    }
}

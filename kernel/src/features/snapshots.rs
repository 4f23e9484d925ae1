//! Snapshots of workspaces for checkpoints: one git repository of superpi's own per workspace
//! (`DATA_DIR/checkpoints/KEY`, KEY from the workspace's path), whose work tree is the
//! workspace. A snapshot is a tree object (`git add -A` into that repository's own index, then
//! `write-tree`), kept alive by refs under `refs/superpi/`; the workspace's `.git`, branches,
//! index and HEAD are never read or written (and a workspace that is no repository works the
//! same). git runs through the sandbox crate ([`superpi_sandbox::run_git`]). A leaf: it knows
//! neither the kernel nor conversations, only workspaces, trees and ref names.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest as _, Sha256};
use superpi_sandbox::{Committed, GitRepo, commit_paths, run_git};

use crate::sync::lock;

/// Longest one git command may take (a first snapshot of a large workspace reads all of it).
const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// The checkpoint repositories of one kernel, one lock per workspace: snapshots, restores and
/// commits of one workspace run one at a time (one index per repository).
pub(crate) struct Snapshots {
    root: PathBuf,
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    /// The (conversation, turn) pairs running with a snapshot taken, and its workspace.
    pub taken: Mutex<HashMap<(i64, i64), PathBuf>>,
}

/// One workspace's checkpoint repository, held under its lock.
pub(crate) struct Repo {
    git_dir: PathBuf,
    work_tree: PathBuf,
    _held: tokio::sync::OwnedMutexGuard<()>,
}

/// How a path differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    /// Relative to the workspace.
    pub path: String,
    /// Absent from the older snapshot: the newer one created it.
    pub created: bool,
}

impl Snapshots {
    pub fn new(data_dir: &Path) -> Self {
        Snapshots { root: data_dir.join("checkpoints"), locks: Mutex::default(), taken: Mutex::default() }
    }

    /// The repository of `workspace`, once no other snapshot, restore or commit of it runs.
    pub async fn open(&self, workspace: &Path) -> Repo {
        let held = lock(&self.locks).entry(workspace.to_path_buf()).or_default().clone();
        let held = held.lock_owned().await;
        let key = hex(&Sha256::digest(workspace.as_os_str().as_encoded_bytes())[..8]);
        Repo { git_dir: self.root.join(key), work_tree: workspace.to_path_buf(), _held: held }
    }
}

impl Repo {
    async fn git(&self, args: &[&str], stdin: Option<Vec<u8>>) -> Result<String, String> {
        let repo = GitRepo::Private { git_dir: &self.git_dir, work_tree: &self.work_tree };
        let out = run_git(repo, args, stdin, GIT_TIMEOUT).await?;
        String::from_utf8(out).map_err(|_| "git printed something that is not UTF-8".to_string())
    }

    /// Records the workspace as it is now: the tree's id.
    pub async fn snapshot(&self) -> Result<String, String> {
        if !self.git_dir.join("HEAD").exists() {
            std::fs::create_dir_all(&self.git_dir).map_err(|e| format!("{}: {e}", self.git_dir.display()))?;
            self.git(&["init", "-q"], None).await?;
            // Which workspace this is, for a person looking in the data dir.
            let _ = std::fs::write(self.git_dir.join("description"), self.work_tree.as_os_str().as_encoded_bytes());
        }
        self.git(&["add", "-A"], None).await?;
        Ok(self.git(&["write-tree"], None).await?.trim().to_string())
    }

    /// Points `name` (under `refs/superpi/`) at `object`.
    pub async fn set_ref(&self, name: &str, object: &str) -> Result<(), String> {
        self.git(&["update-ref", &format!("refs/superpi/{name}"), object], None).await.map(drop)
    }

    /// The object `name` points at, if it exists.
    pub async fn get_ref(&self, name: &str) -> Option<String> {
        let full = format!("refs/superpi/{name}");
        self.git(&["rev-parse", "-q", "--verify", &full], None).await.ok().map(|s| s.trim().to_string())
    }

    pub async fn delete_ref(&self, name: &str) -> Result<(), String> {
        self.git(&["update-ref", "-d", &format!("refs/superpi/{name}")], None).await.map(drop)
    }

    /// The names (after `refs/superpi/`) of the refs under `prefix`.
    pub async fn refs(&self, prefix: &str) -> Result<Vec<String>, String> {
        if !self.git_dir.join("HEAD").exists() {
            return Ok(Vec::new());
        }
        let out = self.git(&["for-each-ref", "--format=%(refname)", &format!("refs/superpi/{prefix}")], None).await?;
        Ok(out.lines().filter_map(|l| l.strip_prefix("refs/superpi/")).map(str::to_string).collect())
    }

    /// The paths that differ between two snapshots, in git's order.
    pub async fn changes(&self, from: &str, to: &str) -> Result<Vec<Change>, String> {
        let out = self.git(&["diff-tree", "-r", "-z", "--no-renames", "--name-status", from, to], None).await?;
        let mut fields = out.split('\0').filter(|f| !f.is_empty());
        let mut changes = Vec::new();
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            changes.push(Change { path: path.to_string(), created: status == "A" });
        }
        Ok(changes)
    }

    /// Commits `paths` as the latest snapshot has them on the workspace repository's current
    /// branch ([`superpi_sandbox::commit_paths`]; its scratch index is in this repository).
    pub async fn commit(&self, paths: &[&str], message: &str, timeout: Duration) -> Result<Committed, String> {
        let repo = GitRepo::Private { git_dir: &self.git_dir, work_tree: &self.work_tree };
        let tree = self.git(&["write-tree"], None).await?;
        commit_paths(repo, tree.trim(), paths, message, &self.git_dir.join("commit-index"), timeout).await
    }

    /// Puts `paths` back as they are in the snapshot `tree`: a path it lacks is removed from
    /// the workspace (it must be in the latest snapshot, which this repository's index holds).
    pub async fn restore(&self, tree: &str, paths: &[&str]) -> Result<(), String> {
        if paths.is_empty() {
            return Ok(());
        }
        let list: Vec<u8> = paths.iter().flat_map(|p| p.bytes().chain([0])).collect();
        let source = format!("--source={tree}");
        let args = ["restore", &source, "--worktree", "--pathspec-from-file=-", "--pathspec-file-nul"];
        self.git(&args, Some(list)).await.map(drop)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[path = "snapshots_tests.rs"]
mod tests;

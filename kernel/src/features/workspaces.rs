//! The workspaces the kernel manages for a harness (`workspace = "scratch"` or
//! `{ shared = "NAME" }` in harnesses.toml), below one root outside the data dir
//! (`Locations::workspaces_dir`): `scratch/ID`, a conversation's own directory named by its id
//! (so a restarted kernel finds it again, and a fork gets its own), and `shared/NAME`, one
//! directory every conversation naming it shares. Each is made 0700 when first needed; a scratch
//! directory goes with its conversation, or after it sat unused for `scratch_ttl_hours`.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use superpi_policy::WorkspaceKind;

const SCRATCH: &str = "scratch";
const SHARED: &str = "shared";

/// The directory a conversation of a harness with workspace `kind` works in, when the kernel
/// manages it (made if missing, canonical); `None` for a repository or no workspace.
pub(crate) fn managed(root: &Path, kind: &WorkspaceKind, conversation: i64) -> Option<io::Result<PathBuf>> {
    dir(root, kind, conversation).map(|dir| make(&dir))
}

/// Where that directory is below the canonical `root`, without making it or touching the disk
/// (as a list shows a conversation not loaded, once per row).
pub(crate) fn listed(root: &Path, kind: &WorkspaceKind, conversation: i64) -> Option<String> {
    dir(root, kind, conversation).map(|dir| dir.to_string_lossy().into_owned())
}

fn dir(root: &Path, kind: &WorkspaceKind, conversation: i64) -> Option<PathBuf> {
    match kind {
        WorkspaceKind::Scratch => Some(root.join(SCRATCH).join(conversation.to_string())),
        WorkspaceKind::Shared(name) => Some(root.join(SHARED).join(name)),
        WorkspaceKind::Repo | WorkspaceKind::None => None,
    }
}

/// What a new conversation of a harness with a workspace other than a repository stores as
/// its workspace: a shared directory's path (made if missing); nothing for a scratch one (its
/// id names it when it is loaded) or none.
pub(crate) fn stored(root: &Path, kind: &WorkspaceKind) -> io::Result<Option<String>> {
    match kind {
        WorkspaceKind::Shared(_) => {
            managed(root, kind, 0).transpose().map(|dir| dir.map(|d| d.to_string_lossy().into_owned()))
        }
        _ => Ok(None),
    }
}

/// Makes `dir` and its parents up to the root 0700 (a scratch directory holds what a model
/// wrote for one person), marks it used now, and returns it canonical.
fn make(dir: &Path) -> io::Result<PathBuf> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    touch(dir);
    dir.canonicalize()
}

/// Marks a directory used now (its modification time is what the sweep reads).
fn touch(dir: &Path) {
    if let Err(err) = fs::File::open(dir).and_then(|f| f.set_modified(SystemTime::now())) {
        tracing::debug!("marking {} used: {err}", dir.display());
    }
}

/// Removes a conversation's scratch directory, if it has one.
pub(crate) fn remove_scratch(root: &Path, conversation: i64) {
    let dir = root.join(SCRATCH).join(conversation.to_string());
    match fs::remove_dir_all(&dir) {
        Ok(()) => tracing::info!(conversation, "removed its scratch workspace"),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => tracing::warn!(conversation, "removing its scratch workspace {}: {err}", dir.display()),
    }
}

/// Removes the scratch directories unused for `ttl` (their conversation is not `in_use`),
/// and those whose conversation is gone (`exists` says false); returns how many went.
pub(crate) fn sweep(root: &Path, ttl: Duration, in_use: impl Fn(i64) -> bool, exists: impl Fn(i64) -> bool) -> usize {
    let Ok(entries) = fs::read_dir(root.join(SCRATCH)) else { return 0 };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let Some(id) = entry.file_name().to_str().and_then(|n| n.parse::<i64>().ok()) else { continue };
        if in_use(id) {
            continue;
        }
        let idle = entry.metadata().and_then(|m| m.modified()).ok().and_then(|m| now.duration_since(m).ok());
        if idle.is_some_and(|idle| idle >= ttl) || !exists(id) {
            remove_scratch(root, id);
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_scratch_dir_is_the_conversations_own_and_private() {
        let root = tempfile::tempdir().unwrap();
        let one = managed(root.path(), &WorkspaceKind::Scratch, 7).unwrap().unwrap();
        assert_eq!(one, root.path().canonicalize().unwrap().join("scratch/7"));
        assert_eq!(fs::metadata(&one).unwrap().mode() & 0o777, 0o700);
        fs::write(one.join("kept"), "x").unwrap();
        // Asked again (a restarted kernel), the same directory with what it held.
        assert_eq!(managed(root.path(), &WorkspaceKind::Scratch, 7).unwrap().unwrap(), one);
        assert!(one.join("kept").exists());
        let shared = managed(root.path(), &WorkspaceKind::Shared("team".into()), 7).unwrap().unwrap();
        assert!(shared.ends_with("shared/team"));
        assert!(managed(root.path(), &WorkspaceKind::Repo, 7).is_none());
        remove_scratch(root.path(), 7);
        assert!(!one.exists() && shared.exists());
    }

    #[test]
    fn the_sweep_spares_what_is_used_and_recent() {
        let root = tempfile::tempdir().unwrap();
        for id in [1, 2, 3, 4] {
            managed(root.path(), &WorkspaceKind::Scratch, id).unwrap().unwrap();
        }
        let day = Duration::from_secs(86_400);
        let old = SystemTime::now() - 2 * day;
        for id in [1, 2] {
            let dir = root.path().join(format!("scratch/{id}"));
            fs::File::open(&dir).unwrap().set_modified(old).unwrap();
        }
        // 1: old and in use (live); 2: old; 3: recent; 4: recent but its conversation is gone.
        let removed = sweep(root.path(), day, |id| id == 1, |id| id != 4);
        assert_eq!(removed, 2);
        let left: Vec<bool> = (1..=4).map(|id| root.path().join(format!("scratch/{id}")).exists()).collect();
        assert_eq!(left, [true, false, true, false]);
    }
}

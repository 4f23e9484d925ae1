//! Hard links to protected files. `ln .env notes.txt` gives the contents of `.env` a second
//! name that no rule protects, and landlock sees only a workspace file. So a regular file with
//! more than one link is read, written or searched by a file tool only when no protected file
//! of the workspace is the same file (device and inode). The workspace is walked for its
//! protected files once per call, and only when such a file is met: most files have one link.
//!
//! A hard link to a file outside the workspace cannot be checked here (the runner cannot read
//! outside); it cannot be made from inside the sandbox either (sandbox/ARCHITECTURE.md).

use std::cell::OnceCell;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ignore::WalkBuilder;
use superpi_paths::ProtectedPaths;

/// Most entries walked looking for protected files; past it a linked file is refused (the
/// check fails closed rather than guess).
const WALK_MAX: usize = 2_000_000;

/// Protected files with more than one link, by (device, inode).
type ByInode = HashMap<(u64, u64), PathBuf>;

/// The protected files of the workspace that have more than one link, found on first use.
#[derive(Default)]
pub(crate) struct LinkedProtected(OnceCell<Result<ByInode, String>>);

impl LinkedProtected {
    /// The protected file `path` is another name of, when it is one (`Err` when that cannot be
    /// told). Symlinks are followed: a link to a hard link is the file too.
    pub(crate) fn twin_of(
        &self,
        path: &Path,
        workspace: &Path,
        protected: &ProtectedPaths,
    ) -> Result<Option<&Path>, String> {
        let Ok(meta) = std::fs::metadata(path) else { return Ok(None) };
        if !meta.is_file() || meta.nlink() < 2 {
            return Ok(None);
        }
        let found = self.0.get_or_init(|| walk(workspace, protected));
        match found {
            Ok(files) => Ok(files.get(&(meta.dev(), meta.ino())).map(PathBuf::as_path)),
            Err(why) => Err(why.clone()),
        }
    }
}

/// Every protected regular file under `workspace` with more than one link. Hidden and ignored
/// files included, symlinks not followed (a symlink's target is a file of its own).
fn walk(workspace: &Path, protected: &ProtectedPaths) -> Result<ByInode, String> {
    let mut files = HashMap::new();
    let walker = WalkBuilder::new(workspace).standard_filters(false).follow_links(false).build();
    for (seen, entry) in walker.enumerate() {
        if seen >= WALK_MAX {
            return Err(format!(
                "the workspace holds over {WALK_MAX} entries: whether this file is a hard link to a protected one cannot be told"
            ));
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) || protected.reason(entry.path(), Some(workspace)).is_none()
        {
            continue;
        }
        if let Ok(meta) = entry.metadata()
            && meta.nlink() > 1
        {
            files.insert((meta.dev(), meta.ino()), entry.into_path());
        }
    }
    Ok(files)
}

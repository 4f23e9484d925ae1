//! Which directory may be a conversation's workspace: the one rule the sandbox applies before
//! any tool runs, and the frontends apply early so a person is told at once (ACP's
//! `session/new`, `superpi mcp`, the gateway). It reads the filesystem: a workspace is checked
//! canonical, through its symbolic links.

use std::path::{Path, PathBuf};

/// The canonical workspace, or why the sandbox refuses it: the whole filesystem, a directory
/// holding the home directory (its credentials) or one of superpi's own directories.
/// `own_dirs`: superpi's data, config and runtime directories.
pub fn check_workspace(workspace: &Path, own_dirs: &[&Path]) -> Result<PathBuf, String> {
    let dirs = own_dirs.iter().map(|dir| dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()));
    check_canonical_workspace(workspace, home_dir().as_deref(), dirs)
}

/// The home directory, canonical, when `HOME` names one that exists.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from).and_then(|h| h.canonicalize().ok())
}

/// [`check_workspace`] with the home directory and the own directories already resolved (the
/// sandbox resolves them once, not at each call).
pub fn check_canonical_workspace(
    workspace: &Path,
    home: Option<&Path>,
    own_dirs: impl Iterator<Item = PathBuf>,
) -> Result<PathBuf, String> {
    let canonical =
        workspace.canonicalize().map_err(|e| format!("the workspace {} is not usable: {e}", workspace.display()))?;
    if !canonical.is_dir() {
        return Err(format!("the workspace {} is not a directory", workspace.display()));
    }
    if canonical == Path::new("/") {
        return Err("the sandbox refuses the whole filesystem as a workspace".into());
    }
    if let Some(home) = home
        && home.starts_with(&canonical)
    {
        return Err(format!(
            "the sandbox refuses {} as a workspace: it holds the home directory {} and its credentials; \
             start superpi in a project directory",
            canonical.display(),
            home.display()
        ));
    }
    for dir in own_dirs {
        if dir.starts_with(&canonical) {
            return Err(format!(
                "the sandbox refuses {} as a workspace: it holds superpi's own directory {}",
                canonical.display(),
                dir.display()
            ));
        }
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_directory_is_accepted_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir(&project).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&project, &link).unwrap();
        let canonical = project.canonicalize().unwrap();
        assert_eq!(check_canonical_workspace(&link, None, std::iter::empty()), Ok(canonical));
    }

    #[test]
    fn the_root_the_home_and_superpis_own_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let data = dir.path().join("data");
        std::fs::create_dir_all(home.join("me")).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        let root = check_canonical_workspace(Path::new("/"), None, std::iter::empty()).unwrap_err();
        assert!(root.contains("whole filesystem"), "{root}");
        let above_home = check_canonical_workspace(&home, Some(&home.join("me")), std::iter::empty()).unwrap_err();
        assert!(above_home.contains("home directory"), "{above_home}");
        let own = check_canonical_workspace(dir.path(), None, std::iter::once(data.canonicalize().unwrap()));
        assert!(own.unwrap_err().contains("superpi's own directory"));
        let own = check_workspace(dir.path(), &[&data]).unwrap_err();
        assert!(own.contains("superpi's own directory"), "{own}");
    }

    #[test]
    fn a_missing_directory_or_a_file_is_not_usable() {
        let dir = tempfile::tempdir().unwrap();
        let missing = check_canonical_workspace(&dir.path().join("gone"), None, std::iter::empty()).unwrap_err();
        assert!(missing.contains("not usable"), "{missing}");
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let file = check_canonical_workspace(&file, None, std::iter::empty()).unwrap_err();
        assert!(file.contains("not a directory"), "{file}");
    }
}

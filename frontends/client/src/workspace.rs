//! A frontend's workspace: the directory named by `--workspace`, else the current one, always
//! canonical (so the kernel, the sandbox and every frontend speak of one path), and checked
//! against the sandbox's rule (superpi-paths' `check_workspace`) where a frontend wants to say
//! early that a directory cannot be one.

use std::path::{Path, PathBuf};

use superpi_proto::Locations;

/// Why no workspace could be resolved.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("cannot read the current directory: {0}")]
    CurrentDir(std::io::Error),
    #[error("cannot use the workspace {}: {source}", path.display())]
    Unusable { path: PathBuf, source: std::io::Error },
}

/// `given`, else the current directory, canonical.
pub fn resolve_workspace(given: Option<&Path>) -> Result<PathBuf, WorkspaceError> {
    let dir = match given {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().map_err(WorkspaceError::CurrentDir)?,
    };
    dir.canonicalize().map_err(|source| WorkspaceError::Unusable { path: dir, source })
}

/// The canonical workspace, or why the sandbox would refuse it (the whole filesystem, the home
/// directory, superpi's own directories of `locations`).
pub fn check_workspace(workspace: &Path, locations: &Locations) -> Result<PathBuf, String> {
    superpi_paths::check_workspace(workspace, &[&locations.data_dir, &locations.config_dir, &locations.runtime_dir])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_directory_is_made_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir(&project).unwrap();
        let dotted = dir.path().join("project/../project");
        assert_eq!(resolve_workspace(Some(&dotted)).unwrap(), project.canonicalize().unwrap());
        let missing = resolve_workspace(Some(&dir.path().join("gone"))).unwrap_err();
        assert!(matches!(&missing, WorkspaceError::Unusable { path, .. } if path.ends_with("gone")), "{missing}");
    }

    #[test]
    fn without_one_the_current_directory_is_the_workspace() {
        let current = std::env::current_dir().unwrap().canonicalize().unwrap();
        assert_eq!(resolve_workspace(None).unwrap(), current);
    }

    #[test]
    fn superpis_own_directories_cannot_be_workspaces() {
        let dir = tempfile::tempdir().unwrap();
        let locations = Locations::under(dir.path());
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        let refused = check_workspace(dir.path(), &locations).unwrap_err();
        assert!(refused.contains("superpi's own directory"), "{refused}");
        let project = check_workspace(&dir.path().join("project"), &locations).unwrap();
        assert_eq!(project, dir.path().join("project").canonicalize().unwrap());
    }
}

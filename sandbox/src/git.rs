//! git for the kernel's checkpoints of a workspace and their optional auto-commit. The kernel
//! builds every argument list itself (never a model's command line), and no program of the
//! user's or the workspace's configuration runs: hooks point at /dev/null, automatic
//! maintenance is off, and a private repository reads no configuration but its own (no
//! system or global file, so no filter driver, fsmonitor, pager or credential helper). It
//! runs unconfined, like [`crate::run_host_command`]: it must write superpi's data dir (the
//! checkpoint store), which no confined process may reach, and the workspace.

use std::path::Path;
use std::time::Duration;

use crate::host::run_to_end;

/// Which repository a git command works on.
#[derive(Debug, Clone, Copy)]
pub enum GitRepo<'a> {
    /// A repository of superpi's own (`git_dir`, in its data dir) whose work tree is the
    /// workspace: the workspace's own `.git`, branches and index are never read or written.
    Private { git_dir: &'a Path, work_tree: &'a Path },
    /// The user's repository at the workspace, with the user's configuration (their
    /// identity for a commit); hooks do not run.
    Workspace(&'a Path),
}

/// Settings every command gets: no hook runs, nothing is started in the background.
const FIXED: [&str; 8] =
    ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false"];

/// The environment passed through to git working on the user's repository: where their
/// configuration is and who they are.
const USER_VARS: [&str; 9] = [
    "HOME",
    "XDG_CONFIG_HOME",
    "USER",
    "LOGNAME",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "EMAIL",
];

/// Runs `git ARGS` on `repo` within `timeout`, `stdin` written to it: its standard output,
/// or an error with its status and stderr. Pathspecs are literal (`GIT_LITERAL_PATHSPECS`):
/// a file named `*` is that file.
#[allow(clippy::disallowed_methods)] // the sandbox crate is where processes start
pub async fn run_git(
    repo: GitRepo<'_>,
    args: &[&str],
    stdin: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let mut command = tokio::process::Command::new("git");
    command.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command.env("LANG", "C").env("LC_ALL", "C").env("GIT_TERMINAL_PROMPT", "0").env("GIT_LITERAL_PATHSPECS", "1");
    match repo {
        GitRepo::Private { git_dir, work_tree } => {
            command
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("HOME", git_dir)
                .arg("--git-dir")
                .arg(git_dir)
                .arg("--work-tree")
                .arg(work_tree)
                .args(["-c", "core.bare=false", "-c", "core.autocrlf=false", "-c", "core.quotePath=false"]);
        }
        GitRepo::Workspace(dir) => {
            for name in USER_VARS {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
            command.arg("-C").arg(dir);
        }
    }
    command.args(FIXED).args(args);
    run_to_end("git", command, stdin, timeout).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_private_repository_keeps_the_workspace_repository_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, git_dir) = (dir.path().join("ws"), dir.path().join("store"));
        std::fs::create_dir_all(&ws).unwrap();
        let t = Duration::from_secs(30);
        run_git(GitRepo::Workspace(&ws), &["init", "-q"], None, t).await.unwrap();
        std::fs::write(ws.join("a.txt"), "a").unwrap();
        let init = ["init", "-q", "--bare", git_dir.to_str().unwrap()];
        run_git(GitRepo::Workspace(dir.path()), &init, None, t).await.unwrap();
        let private = GitRepo::Private { git_dir: &git_dir, work_tree: &ws };
        run_git(private, &["add", "-A"], None, t).await.unwrap();
        let tree = run_git(private, &["write-tree"], None, t).await.unwrap();
        let tree = String::from_utf8(tree).unwrap();
        let listed = run_git(private, &["ls-tree", "--name-only", tree.trim()], None, t).await.unwrap();
        assert_eq!(String::from_utf8(listed).unwrap(), "a.txt\n");
        // The workspace's own repository saw nothing: a.txt is still untracked there.
        let status = run_git(GitRepo::Workspace(&ws), &["status", "--porcelain"], None, t).await.unwrap();
        assert_eq!(String::from_utf8(status).unwrap(), "?? a.txt\n");
        let wrong = run_git(private, &["cat-file", "-t", "0000"], None, t).await.unwrap_err();
        assert!(wrong.starts_with("git failed"), "{wrong}");
    }
}

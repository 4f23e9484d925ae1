//! git for the kernel's checkpoints of a workspace and their optional auto-commit. The kernel
//! builds every argument list itself (never a model's command line), and no program that a
//! configuration names runs, whoever wrote it: a confined tool may write the workspace's
//! `.git/config` and `.gitattributes`, and this git runs unconfined (it must write superpi's
//! data dir, the checkpoint store, which no confined process may reach).
//!
//! How, in two parts. A private repository ([`GitRepo::Private`]) reads no configuration but
//! its own (no system or global file, nothing of the workspace's `.git`), so a filter, diff or
//! merge driver named in `.gitattributes` has no definition and does nothing. The workspace's
//! repository ([`GitRepo::Workspace`]) is given only the plumbing in [`WORKSPACE_COMMANDS`],
//! which reads or writes objects, the index and refs and never a file's content through a
//! driver (`filter.*`, `diff.*`, `merge.*` cannot be switched off by name: their commands are
//! never run); its content comes from the private repository (see [`commit_paths`]). Every
//! other key that names a program is set to run nothing in [`NEUTRAL`], given to every
//! command on its command line, which wins over any file and anything it includes.

use std::path::Path;
use std::time::Duration;

use crate::host::run_to_end;

/// Which repository a git command works on.
#[derive(Debug, Clone, Copy)]
pub enum GitRepo<'a> {
    /// A repository of superpi's own (`git_dir`, in its data dir) whose work tree is the
    /// workspace: the workspace's own `.git`, branches and index are never read or written.
    Private { git_dir: &'a Path, work_tree: &'a Path },
    /// The user's repository at or above `dir`, with no system or global configuration, and
    /// `index` instead of its index when given; only [`WORKSPACE_COMMANDS`].
    Workspace { dir: &'a Path, index: Option<&'a Path> },
}

/// The one list of configuration keys (with a fixed name) that can start a program, each set
/// to start none: hooks, fsmonitor, background maintenance, signing and its verification,
/// credential helpers, transports (`protocol.allow`, so no `core.sshCommand`, `ext::`,
/// `core.alternateRefsCommand` or upload-pack hook can run), pager, editors, and the external
/// diff. Keys with a name inside (`filter.X.clean`/`smudge`/`process`, `diff.X.command`/
/// `textconv`, `merge.X.driver`, `gpg.X.program`) are handled by the commands run instead
/// (module docs). `include.path`/`includeIf` only read more configuration, which these win over.
pub const NEUTRAL: [(&str, &str); 18] = [
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", "false"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("diff.external", ""),
];

/// [`NEUTRAL`] as a read-only tool call gets it (through `GIT_CONFIG_COUNT`, call.rs), less
/// two keys: an empty `diff.external` makes `git diff` fail ("cannot run"), and
/// `protocol.allow=never` would fail `git remote show` granted network. Those programs, and
/// textconv drivers, run confined to a read-only workspace.
pub fn read_only_neutral() -> Vec<(&'static str, &'static str)> {
    NEUTRAL.into_iter().filter(|(key, _)| !["diff.external", "protocol.allow"].contains(key)).collect()
}

/// What the kernel may run in a workspace's repository: plumbing that never passes a file's
/// content through a driver with the arguments the kernel gives (`update-index` only with
/// `--index-info` or `--force-remove`, never hashing a file itself).
pub const WORKSPACE_COMMANDS: [&str; 10] = [
    "init",
    "rev-parse",
    "symbolic-ref",
    "ls-files",
    "unpack-objects",
    "read-tree",
    "update-index",
    "write-tree",
    "commit-tree",
    "update-ref",
];

/// The identity the user's git would commit with: their own variables and configuration.
const USER_VARS: [&str; 7] =
    ["USER", "LOGNAME", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"];

/// The settings of [`NEUTRAL`] as `-c` arguments.
fn neutral_args() -> impl Iterator<Item = String> {
    NEUTRAL.iter().flat_map(|(key, value)| ["-c".to_string(), format!("{key}={value}")])
}

/// A git command with no inherited environment (so no `GIT_*` variable of the kernel's, such
/// as `GIT_EXTERNAL_DIFF`, reaches it) but PATH and a C locale.
#[allow(clippy::disallowed_methods)] // the sandbox crate is where processes start
fn git_command() -> tokio::process::Command {
    let mut command = tokio::process::Command::new("git");
    command.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command.env("LANG", "C").env("LC_ALL", "C").env("GIT_TERMINAL_PROMPT", "0").env("GIT_LITERAL_PATHSPECS", "1");
    command.env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null");
    command
}

/// Runs `git ARGS` on `repo` within `timeout`, `stdin` written to it: its standard output,
/// or an error with its status and stderr. Pathspecs are literal (`GIT_LITERAL_PATHSPECS`):
/// a file named `*` is that file.
pub async fn run_git(
    repo: GitRepo<'_>,
    args: &[&str],
    stdin: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let mut command = git_command();
    match repo {
        GitRepo::Private { git_dir, work_tree } => {
            command.env("HOME", git_dir).arg("--git-dir").arg(git_dir).arg("--work-tree").arg(work_tree).args([
                "-c",
                "core.bare=false",
                "-c",
                "core.autocrlf=false",
                "-c",
                "core.quotePath=false",
            ]);
        }
        GitRepo::Workspace { dir, index } => {
            // The command is the first argument after any `-c KEY=VALUE`.
            let mut rest = args.iter().copied();
            let mut name = rest.next().unwrap_or_default();
            while name == "-c" {
                rest.next();
                name = rest.next().unwrap_or_default();
            }
            if !WORKSPACE_COMMANDS.contains(&name) {
                return Err(format!("git {name} is not run in a workspace's repository"));
            }
            for name in USER_VARS {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
            if let Some(index) = index {
                command.env("GIT_INDEX_FILE", index);
            }
            command.arg("-C").arg(dir);
        }
    }
    command.arg("--no-pager").args(neutral_args()).args(args);
    run_to_end("git", command, stdin, timeout).await
}

/// `key` of the user's configuration as their git in `dir` sees it (their global file
/// included): only read, `git config` runs nothing.
async fn user_config(dir: &Path, key: &str, timeout: Duration) -> Option<String> {
    let mut command = git_command();
    command.env_remove("GIT_CONFIG_NOSYSTEM").env_remove("GIT_CONFIG_GLOBAL");
    for name in ["HOME", "XDG_CONFIG_HOME"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.arg("-C").arg(dir).args(["config", "--get", key]);
    let out = run_to_end("git", command, None, timeout).await.ok()?;
    Some(String::from_utf8_lossy(&out).trim().to_string()).filter(|v| !v.is_empty())
}

/// A commit made by [`commit_paths`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Its abbreviated id.
    pub short: String,
    /// The branch it is on (`HEAD` when detached).
    pub branch: String,
}

/// Commits `paths` (relative to the workspace) as they are in `tree`, a snapshot in the
/// private repository `private`, on the current branch of the workspace's repository, over
/// its HEAD: the blobs are copied from the private repository (nothing of the workspace's is
/// read through a filter), the tree and commit are built with plumbing in a scratch index
/// (`scratch`, a file path of the kernel's), and the index of the workspace gets those paths
/// as committed (rebuilt: file stat data is dropped). A path `tree` lacks is removed.
pub async fn commit_paths(
    private: GitRepo<'_>,
    tree: &str,
    paths: &[&str],
    message: &str,
    scratch: &Path,
    timeout: Duration,
) -> Result<Committed, String> {
    let GitRepo::Private { work_tree: workspace, .. } = private else {
        return Err("the snapshot must be in the private repository".to_string());
    };
    let text = |out: Vec<u8>| String::from_utf8_lossy(&out).trim_end_matches('\n').to_string();
    let ws = GitRepo::Workspace { dir: workspace, index: None };
    let scratch_repo = GitRepo::Workspace { dir: workspace, index: Some(scratch) };
    let prefix = run_git(ws, &["rev-parse", "--show-prefix"], None, timeout)
        .await
        .map_err(|_| "the workspace is not a git repository".to_string())?;
    let prefix = text(prefix);
    let parent = run_git(ws, &["rev-parse", "-q", "--verify", "HEAD^{commit}"], None, timeout).await.ok().map(text);
    // The snapshot's entries for the paths: `MODE TYPE ID\tPATH`, NUL-ended.
    let listed =
        run_git(private, &[&["ls-tree", "-r", "-z", "--full-tree", tree, "--"][..], paths].concat(), None, timeout)
            .await?;
    let mut info = Vec::new();
    let mut blobs = Vec::new();
    let mut present = std::collections::HashSet::new();
    for entry in listed.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, path)) = entry.split_once('\t') else { continue };
        let mut fields = meta.split(' ');
        let (Some(mode), Some(kind), Some(id)) = (fields.next(), fields.next(), fields.next()) else { continue };
        if kind == "blob" {
            blobs.push(id.to_string());
        }
        present.insert(path.to_string());
        info.extend_from_slice(format!("{mode} {id}\t{prefix}{path}\0").as_bytes());
    }
    let removed: Vec<u8> =
        paths.iter().filter(|p| !present.contains(**p)).flat_map(|p| format!("{prefix}{p}\0").into_bytes()).collect();
    if !blobs.is_empty() {
        let ids = blobs.join("\n") + "\n";
        let pack = run_git(private, &["pack-objects", "-q", "--stdout"], Some(ids.into_bytes()), timeout).await?;
        run_git(ws, &["unpack-objects", "-q"], Some(pack), timeout).await?;
    }
    let _ = std::fs::remove_file(scratch);
    let staged = async {
        if let Some(parent) = &parent {
            run_git(scratch_repo, &["read-tree", parent], None, timeout).await?;
        }
        stage(scratch_repo, &info, &removed, timeout).await?;
        run_git(scratch_repo, &["write-tree"], None, timeout).await.map(text)
    };
    let new_tree = staged.await;
    let _ = std::fs::remove_file(scratch);
    let new_tree = new_tree?;
    let mut command = vec!["commit-tree", new_tree.as_str(), "-F", "-"];
    if let Some(parent) = &parent {
        command.extend(["-p", parent.as_str()]);
    }
    // The user's identity, read from their configuration: `-c` before the command.
    let mut args = Vec::new();
    for key in ["user.name", "user.email"] {
        if let Some(value) = user_config(workspace, key, timeout).await {
            args.extend(["-c".to_string(), format!("{key}={value}")]);
        }
    }
    args.extend(command.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let commit = text(run_git(ws, &args, Some(message.as_bytes().to_vec()), timeout).await?);
    let old = parent.clone().unwrap_or_default();
    run_git(ws, &["update-ref", "-m", "superpi: auto-commit", "HEAD", &commit, &old], None, timeout).await?;
    // The workspace's index as committed for these paths, its other entries as they were. Not
    // written in place: git writing an index compares its racily clean entries with their
    // files through the clean filter. Rebuilt aside without file stat data (so none is racy;
    // the user's next `git status` refreshes it) and moved over it.
    let index = workspace.join(text(run_git(ws, &["rev-parse", "--git-path", "index"], None, timeout).await?));
    let mut next = index.clone().into_os_string();
    next.push(".superpi");
    let next = std::path::PathBuf::from(next);
    let _ = std::fs::remove_file(&next);
    let mut entries = run_git(ws, &["ls-files", "-s", "-z"], None, timeout).await?;
    entries.extend_from_slice(&info);
    let rebuilt = stage(GitRepo::Workspace { dir: workspace, index: Some(&next) }, &entries, &removed, timeout).await;
    let moved = rebuilt.and_then(|()| std::fs::rename(&next, &index).map_err(|e| format!("{}: {e}", index.display())));
    if let Err(err) = moved {
        let _ = std::fs::remove_file(&next);
        return Err(format!("committed, but the index was not updated: {err}"));
    }
    let short = text(run_git(ws, &["rev-parse", "--short", &commit], None, timeout).await?);
    let branch = run_git(ws, &["symbolic-ref", "-q", "--short", "HEAD"], None, timeout).await.map(text);
    Ok(Committed { short, branch: branch.unwrap_or_else(|_| "HEAD".to_string()) })
}

/// Puts `info` (`MODE ID\tPATH`, NUL-ended) into `repo`'s index and takes `removed` out:
/// entries given whole, so no file is read.
async fn stage(repo: GitRepo<'_>, info: &[u8], removed: &[u8], timeout: Duration) -> Result<(), String> {
    if !info.is_empty() {
        run_git(repo, &["update-index", "-z", "--index-info"], Some(info.to_vec()), timeout).await?;
    }
    if !removed.is_empty() {
        run_git(repo, &["update-index", "-z", "--force-remove", "--stdin"], Some(removed.to_vec()), timeout).await?;
    }
    Ok(())
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
        run_git(GitRepo::Workspace { dir: &ws, index: None }, &["init", "-q"], None, t).await.unwrap();
        std::fs::write(ws.join("a.txt"), "a").unwrap();
        let init = ["init", "-q", "--bare", git_dir.to_str().unwrap()];
        run_git(GitRepo::Workspace { dir: dir.path(), index: None }, &init, None, t).await.unwrap();
        let private = GitRepo::Private { git_dir: &git_dir, work_tree: &ws };
        run_git(private, &["add", "-A"], None, t).await.unwrap();
        let tree = run_git(private, &["write-tree"], None, t).await.unwrap();
        let tree = String::from_utf8(tree).unwrap();
        let listed = run_git(private, &["ls-tree", "--name-only", tree.trim()], None, t).await.unwrap();
        assert_eq!(String::from_utf8(listed).unwrap(), "a.txt\n");
        // The workspace's own repository saw nothing: a.txt is still untracked there.
        let status =
            run_git(GitRepo::Workspace { dir: &ws, index: None }, &["ls-files", "--others"], None, t).await.unwrap();
        assert_eq!(String::from_utf8(status).unwrap(), "a.txt\n");
        let wrong = run_git(private, &["cat-file", "-t", "0000"], None, t).await.unwrap_err();
        assert!(wrong.starts_with("git failed"), "{wrong}");
    }
}

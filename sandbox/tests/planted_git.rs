//! The kernel's own git (checkpoint snapshots, restores and the auto-commit) runs no program
//! that a workspace's git configuration names, key by key: a confined tool may write
//! `.git/config`, `.gitattributes` and `.git/hooks`, and this git runs unconfined. Each key is
//! planted with a program that writes a marker outside the workspace; the snapshot path and
//! the commit run; the marker must not exist and the commit must be made.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::Path;
use std::time::Duration;

use superpi_sandbox::{GitRepo, commit_paths, run_git};

const T: Duration = Duration::from_secs(60);

/// Each case: configuration lines (`key value`, `EVIL` the marker-writing program).
const CASES: &[(&str, &[(&str, &str)])] = &[
    ("filter.clean", &[("filter.x.clean", "EVIL")]),
    ("filter.smudge", &[("filter.x.smudge", "EVIL")]),
    ("filter.process", &[("filter.x.process", "EVIL")]),
    ("diff.command", &[("diff.x.command", "EVIL")]),
    ("diff.textconv", &[("diff.x.textconv", "EVIL")]),
    ("diff.external", &[("diff.external", "EVIL")]),
    ("merge.driver", &[("merge.x.driver", "EVIL")]),
    ("core.fsmonitor", &[("core.fsmonitor", "EVIL")]),
    ("core.hooksPath", &[("core.hooksPath", "HOOKS")]),
    ("hooks", &[]),
    ("gpg.program", &[("gpg.program", "EVIL"), ("commit.gpgSign", "true")]),
    ("gpg.openpgp", &[("gpg.openpgp.program", "EVIL"), ("commit.gpgSign", "true")]),
    ("gpg.x509", &[("gpg.format", "x509"), ("gpg.x509.program", "EVIL"), ("commit.gpgSign", "true")]),
    ("gpg.ssh", &[("gpg.format", "ssh"), ("gpg.ssh.program", "EVIL"), ("commit.gpgSign", "true")]),
    (
        "gpg.ssh.defaultKeyCommand",
        &[("gpg.format", "ssh"), ("gpg.ssh.defaultKeyCommand", "EVIL"), ("commit.gpgSign", "true")],
    ),
    ("log.showSignature", &[("log.showSignature", "true"), ("gpg.program", "EVIL")]),
    ("credential.helper", &[("credential.helper", "!EVIL")]),
    ("core.sshCommand", &[("core.sshCommand", "EVIL")]),
    ("core.askPass", &[("core.askPass", "EVIL")]),
    ("core.pager", &[("core.pager", "EVIL"), ("pager.log", "EVIL")]),
    ("core.editor", &[("core.editor", "EVIL"), ("sequence.editor", "EVIL")]),
    ("core.alternateRefsCommand", &[("core.alternateRefsCommand", "EVIL")]),
    ("uploadpack.packObjectsHook", &[("uploadpack.packObjectsHook", "EVIL")]),
    ("protocol", &[("protocol.allow", "always"), ("protocol.ext.allow", "always")]),
    ("include.path", &[("include.path", "INCLUDED")]),
    ("includeIf", &[("includeIf.gitdir:/.path", "INCLUDED")]),
];

/// The hooks git knows of that plumbing or a commit may run.
const HOOKS: [&str; 8] = [
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "reference-transaction",
    "post-index-change",
    "pre-auto-gc",
    "post-checkout",
];

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git").arg("-C").arg(dir).args(args).status().unwrap().success();
    assert!(ok, "git {args:?}");
}

/// What `git ARGS` prints in `dir` (no fsmonitor).
fn read(dir: &Path, args: &[&str]) -> String {
    let out =
        std::process::Command::new("git").arg("-C").arg(dir).args(["-c", "core.fsmonitor=false"]).args(args).output();
    String::from_utf8(out.unwrap().stdout).unwrap()
}

fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A workspace repository with one commit and `lines` planted, and the marker's path outside.
fn planted(root: &Path, name: &str, lines: &[(&str, &str)]) -> (std::path::PathBuf, std::path::PathBuf) {
    let (ws, out) = (root.join(format!("ws-{name}")), root.join(format!("out-{name}")));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(out.join("hooks")).unwrap();
    let marker = out.join("marker");
    let evil = out.join("evil");
    // Writes the marker, then passes its input through (a filter's contract).
    executable(&evil, &format!("#!/bin/sh\necho \"$0 $*\" >> {}\nexec cat\n", marker.display()));
    for hook in HOOKS {
        executable(&out.join("hooks").join(hook), &format!("#!/bin/sh\necho {hook} >> {}\n", marker.display()));
    }
    std::fs::write(out.join("included"), format!("[filter \"x\"]\n\tclean = {} && cat\n", evil.display())).unwrap();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    std::fs::write(ws.join("gone.txt"), "gone\n").unwrap();
    std::fs::write(ws.join(".gitattributes"), "* filter=x diff=x merge=x\n").unwrap();
    git(&ws, &["add", "-A"]);
    git(&ws, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first"]);
    for hook in HOOKS {
        executable(&ws.join(".git/hooks").join(hook), &format!("#!/bin/sh\necho {hook} >> {}\n", marker.display()));
    }
    for (key, value) in lines {
        let value = value
            .replace("EVIL", &evil.display().to_string())
            .replace("HOOKS", &out.join("hooks").display().to_string())
            .replace("INCLUDED", &out.join("included").display().to_string());
        git(&ws, &["config", "--add", key, &value]);
    }
    (ws, marker)
}

#[tokio::test]
async fn no_planted_configuration_runs_under_snapshots_or_the_auto_commit() {
    let root = tempfile::tempdir().unwrap();
    for (name, lines) in CASES {
        let (ws, marker) = planted(root.path(), name, lines);
        let git_dir = root.path().join(format!("private-{name}"));
        std::fs::create_dir_all(&git_dir).unwrap();
        let private = GitRepo::Private { git_dir: &git_dir, work_tree: &ws };
        // The snapshot path: record, change, record, compare, put one path back.
        run_git(private, &["init", "-q"], None, T).await.unwrap();
        run_git(private, &["add", "-A"], None, T).await.unwrap();
        let before = String::from_utf8(run_git(private, &["write-tree"], None, T).await.unwrap()).unwrap();
        std::fs::write(ws.join("a.txt"), "two\n").unwrap();
        std::fs::write(ws.join("new.txt"), "new\n").unwrap();
        std::fs::remove_file(ws.join("gone.txt")).unwrap();
        run_git(private, &["add", "-A"], None, T).await.unwrap();
        let after = String::from_utf8(run_git(private, &["write-tree"], None, T).await.unwrap()).unwrap();
        let diff = ["diff-tree", "-r", "-z", "--no-renames", "--name-status", before.trim(), after.trim()];
        run_git(private, &diff, None, T).await.unwrap();
        // The auto-commit.
        let paths = ["a.txt", "gone.txt", "new.txt"];
        let scratch = git_dir.join("commit-index");
        let done = commit_paths(private, after.trim(), &paths, "bot: a turn", &scratch, T).await;
        let done = done.unwrap_or_else(|e| panic!("{name}: {e}"));
        let restore = ["restore", &format!("--source={}", before.trim()), "--worktree", "--", "a.txt"];
        run_git(private, &restore, None, T).await.unwrap();
        assert!(!marker.exists(), "{name} ran: {}", std::fs::read_to_string(&marker).unwrap_or_default());
        // The commit holds the turn's paths over the first commit, and the index agrees.
        assert_eq!(done.branch, "master", "{name}");
        let show = read(&ws, &["ls-tree", "-r", "--name-only", "HEAD"]);
        assert_eq!(show, ".gitattributes\na.txt\nnew.txt\n", "{name}");
        let staged = read(&ws, &["diff-index", "--cached", "--name-only", "HEAD"]);
        assert_eq!(staged, "", "{name}: the index differs from the commit");
        assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\n", "{name}");
    }
}

/// The planting works: the user's own git, as the kernel ran it before, runs the filter.
#[test]
fn a_planted_filter_runs_under_a_plain_git_add() {
    let root = tempfile::tempdir().unwrap();
    let (ws, marker) = planted(root.path(), "control", &[("filter.x.clean", "EVIL")]);
    std::fs::write(ws.join("a.txt"), "two\n").unwrap();
    git(&ws, &["-c", "core.hooksPath=/dev/null", "add", "-A"]);
    assert!(marker.exists());
}

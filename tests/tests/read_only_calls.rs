//! End to end: a shell line the policy allows because it only reads runs with a read-only
//! workspace, so a program a planted `.git/config` names (fsmonitor, external diff, textconv)
//! writes nothing there, in plan mode included; a line that is not read-only writes as before.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly and run git

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;
use superpi_tests::TestEnv;

const MARKERS: [&str; 3] = ["by-fsmonitor", "by-external-diff", "by-textconv"];

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A repository with a changed `f.txt` and a `.git/config` whose fsmonitor, external diff and
/// textconv driver (named by `.gitattributes`) each leave a marker in the workspace.
fn planted_repo(ws: &Path) {
    git(ws, &["init", "-q"]);
    std::fs::write(ws.join("f.txt"), "one\n").unwrap();
    std::fs::write(ws.join(".gitattributes"), "*.txt diff=planted\n").unwrap();
    git(ws, &["add", "."]);
    git(ws, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]);
    std::fs::write(ws.join("f.txt"), "one\ntwo\n").unwrap();
    let marker = |name: &str| ws.join(name).display().to_string();
    git(ws, &["config", "core.fsmonitor", &format!("touch {}; false", marker(MARKERS[0]))]);
    git(ws, &["config", "diff.external", &format!("touch {}", marker(MARKERS[1]))]);
    git(ws, &["config", "diff.planted.textconv", &format!("touch {}; cat", marker(MARKERS[2]))]);
}

fn planted_markers(ws: &Path) -> Vec<&'static str> {
    MARKERS.into_iter().filter(|m| ws.join(m).exists()).collect()
}

/// `superpi run --mode MODE`, the mock model calling bash once per line, no answer on stdin.
fn run_bash(env: &TestEnv, mode: &str, lines: &[&str]) {
    let prompt: Vec<String> = lines.iter().map(|line| format!("@tool bash {}", json!({ "command": line }))).collect();
    let out = env.command(&["run", "--mode", mode, &prompt.join("\n")]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(!stderr.contains("? permission"), "asked: {stderr}");
}

#[test]
fn read_only_git_in_plan_mode_runs_no_planted_program_that_writes() {
    let env = TestEnv::new();
    let ws = &env.workspace;
    planted_repo(ws);
    // Each line is classified read-only (no question in plan mode).
    run_bash(&env, "plan", &["git status", "git diff", "git diff --no-ext-diff", "git log -p", "git show"]);
    assert_eq!(planted_markers(ws), Vec::<&str>::new());
    assert!(!ws.join(".git/index.lock").exists());

    // Not read-only (it writes a file): the workspace is writable, and the user's git is what
    // a shell line runs, planted configuration included.
    run_bash(&env, "auto", &["git status && git diff --no-ext-diff && touch ran"]);
    assert!(ws.join("ran").exists());
    assert_eq!(planted_markers(ws), ["by-fsmonitor", "by-textconv"]);
}

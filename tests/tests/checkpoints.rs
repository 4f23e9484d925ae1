//! End to end: checkpoints through the terminal frontend (`superpi run`), the mock model and
//! the kernel's pipeline. A turn's writes (a file edited, files created by `write` and by
//! `bash`) are undone by `superpi session undo`, while the workspace repository's branch,
//! HEAD and index stay as the user left them and nothing is committed (auto-commit is off
//! by default); an undo that would lose a later edit is refused; a workspace that is no git
//! repository works the same; with `checkpoints.auto_commit` a turn's files, and only
//! those, are committed with the prefix.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly; tests run git

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use superpi_tests::TestEnv;

/// `git ARGS` in `dir` (the user's own git, as a person would run it): its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").args(args).current_dir(dir).env("GIT_CONFIG_NOSYSTEM", "1").output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A repository in the workspace: `a.txt` committed on `main`, `staged.txt` added to the index.
fn repository(env: &TestEnv) {
    std::fs::write(env.home.join(".gitconfig"), "[user]\n\tname = Ada\n\temail = ada@example.com\n").unwrap();
    let ws = &env.workspace;
    let run = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(ws).env("HOME", &env.home).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(&["init", "-q", "-b", "main"]);
    std::fs::write(ws.join("a.txt"), "original\n").unwrap();
    run(&["add", "a.txt"]);
    run(&["commit", "-q", "-m", "first"]);
    std::fs::write(ws.join("staged.txt"), "staged\n").unwrap();
    run(&["add", "staged.txt"]);
}

/// What the user's repository says of itself: branch, HEAD, index, status.
fn repository_state(ws: &Path) -> (String, String, String, String) {
    (
        git(ws, &["rev-parse", "--abbrev-ref", "HEAD"]),
        git(ws, &["rev-parse", "HEAD"]),
        git(ws, &["ls-files", "--stage"]),
        git(ws, &["status", "--porcelain", "--untracked-files=all"]),
    )
}

/// `superpi run` of one prompt in the latest conversation (a new one when `fresh`), in auto
/// mode; the conversation's id.
fn turn(env: &TestEnv, prompt: &str, fresh: bool) -> i64 {
    let mut args = vec!["run", "--mode", "auto"];
    if !fresh {
        args.push("--continue");
    }
    args.push(prompt);
    let out = env.command(&args).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let failed: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM events WHERE type = 'tool_completed' AND wire LIKE '%\"is_error\":true%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(failed, 0, "every call ran: {}", String::from_utf8_lossy(&out.stderr));
    db.query_row("SELECT MAX(id) FROM conversations", [], |r| r.get(0)).unwrap()
}

/// `superpi session undo ID --json`: the answer, or the refusal's stderr.
fn undo(env: &TestEnv, conversation: i64) -> Result<Value, String> {
    let out = env.command(&["session", "undo", &conversation.to_string(), "--json"]).output().unwrap();
    match out.status.success() {
        true => Ok(serde_json::from_slice(&out.stdout).unwrap()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

fn read(ws: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(path)).ok()
}

const WRITES: &str = "@tool write {\"path\": \"a.txt\", \"content\": \"changed by the turn\\n\"}\n\
                      @tool write {\"path\": \"new/made.txt\", \"content\": \"made\\n\"}\n\
                      @tool bash {\"command\": \"echo shell > shell.txt\"}";

#[test]
fn undo_puts_a_turns_files_back_and_leaves_the_users_repository_alone() {
    let env = TestEnv::new();
    repository(&env);
    let ws = &env.workspace;
    let before = repository_state(ws);

    let conv = turn(&env, WRITES, true);
    assert_eq!(read(ws, "a.txt").as_deref(), Some("changed by the turn\n"));
    assert_eq!(read(ws, "new/made.txt").as_deref(), Some("made\n"));
    assert_eq!(read(ws, "shell.txt").as_deref(), Some("shell\n"));
    // Auto-commit is off by default: no commit, and the index is the user's.
    let during = repository_state(ws);
    assert_eq!((&during.0, &during.1, &during.2), (&before.0, &before.1, &before.2));
    assert!(!ws.join(".git/refs/superpi").exists(), "no ref of superpi in the user's repository");

    let done = undo(&env, conv).unwrap();
    assert_eq!(done["restored"], json!(["a.txt"]), "{done}");
    assert_eq!(done["removed"], json!(["new/made.txt", "shell.txt"]), "{done}");
    assert_eq!(read(ws, "a.txt").as_deref(), Some("original\n"));
    assert!(!ws.join("new").exists() && !ws.join("shell.txt").exists());
    assert_eq!(read(ws, "staged.txt").as_deref(), Some("staged\n"), "a file the turn did not touch stays");
    assert_eq!(repository_state(ws), before, "branch, HEAD, index and status as the user left them");

    // Undone once: the next undo has nothing left.
    let again = undo(&env, conv).unwrap_err();
    assert!(again.contains("nothing to undo"), "{again}");

    // A later edit of a file the turn wrote is never lost: the undo is refused, naming it.
    let conv = turn(&env, "@tool write {\"path\": \"a.txt\", \"content\": \"second turn\\n\"}", false);
    std::fs::write(ws.join("a.txt"), "edited by hand\n").unwrap();
    let refused = undo(&env, conv).unwrap_err();
    assert!(refused.contains("a.txt changed since"), "{refused}");
    assert_eq!(read(ws, "a.txt").as_deref(), Some("edited by hand\n"));
}

#[test]
fn a_workspace_that_is_no_repository_is_undone_too() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("notes.txt"), "mine\n").unwrap();
    let conv = turn(&env, WRITES.replace("a.txt", "notes.txt").as_str(), true);
    assert_eq!(read(&env.workspace, "notes.txt").as_deref(), Some("changed by the turn\n"));
    let done = undo(&env, conv).unwrap();
    assert_eq!(done["restored"], json!(["notes.txt"]), "{done}");
    assert_eq!(read(&env.workspace, "notes.txt").as_deref(), Some("mine\n"));
    assert!(!env.workspace.join("new").exists() && !env.workspace.join("shell.txt").exists());
    assert!(!env.workspace.join(".git").exists(), "no repository was made in the workspace");
}

#[test]
fn auto_commit_commits_a_turns_files_with_the_prefix() {
    let env = TestEnv::new();
    repository(&env);
    let settings = json!({"checkpoints": {"auto_commit": true, "commit_prefix": "bot: "}});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    let ws = &env.workspace;
    std::fs::write(ws.join("untouched.txt"), "the user's, not the turn's\n").unwrap();

    turn(&env, "Write the files\n@tool write {\"path\": \"a.txt\", \"content\": \"v2\\n\"}", true);
    assert_eq!(git(ws, &["log", "-1", "--format=%s|%an"]), "bot: Write the files|Ada\n");
    assert_eq!(git(ws, &["show", "--name-only", "--format=", "HEAD"]), "a.txt\n", "only the turn's files");
    assert_eq!(git(ws, &["rev-parse", "--abbrev-ref", "HEAD"]), "main\n");
    // What the user had staged and their own files stay as they were.
    assert_eq!(git(ws, &["diff", "--cached", "--name-only"]), "staged.txt\n");
    assert_eq!(git(ws, &["status", "--porcelain"]), "A  staged.txt\n?? untouched.txt\n");
}

//! End to end: the rules files a repository carries (issue #38), through the real binary and
//! the mock model. `AGENTS.md`, `CLAUDE.md`, `GEMINI.md` and `.agents/rules/*.md` of the
//! workspace join the system prompt; a subdirectory's rules join the result of the first tool
//! call that names a path under it, once while the conversation's context holds it (across
//! kernel restarts); `superpi rules` lists both.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::process::Stdio;

use serde_json::{Value, json};
use superpi_tests::TestEnv;

/// The outputs of the stored `tool_completed` events, oldest first.
fn tool_outputs(env: &TestEnv) -> Vec<String> {
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let mut query =
        db.prepare("SELECT wire FROM events WHERE type = 'tool_completed' ORDER BY conversation_id, seq").unwrap();
    let wires: Vec<String> = query.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    wires
        .iter()
        .map(|w| serde_json::from_str::<Value>(w).unwrap()["output"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn run(env: &TestEnv, args: &[&str]) -> (bool, String, String) {
    let out = env.command(args).stdin(Stdio::null()).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn nested_rules_join_the_first_call_under_their_directory_and_are_listed() {
    let env = TestEnv::new();
    let ws = &env.workspace;
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join("AGENTS.md"), "Use tabs.").unwrap();
    std::fs::write(ws.join("CLAUDE.md"), "Use tabs.\n").unwrap(); // a copy: read once
    std::fs::create_dir_all(ws.join(".agents/rules")).unwrap();
    std::fs::write(ws.join(".agents/rules/tests.md"), "Run the tests before you answer.").unwrap();
    std::fs::create_dir_all(ws.join("crates/app/src")).unwrap();
    std::fs::write(ws.join("crates/app/GEMINI.md"), "In app: never touch the migrations.").unwrap();
    std::fs::write(ws.join("crates/app/src/lib.rs"), "pub fn app() {}\n").unwrap();

    let (ok, stdout, stderr) = run(&env, &["rules", "--json"]);
    assert!(ok, "{stderr}");
    let listed: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let rows: Vec<(String, String)> = listed
        .iter()
        .map(|r| {
            let path = r["path"].as_str().unwrap().strip_prefix(&format!("{}/", ws.display())).unwrap().to_string();
            (path, r["kind"].as_str().unwrap().to_string())
        })
        .collect();
    let expected = [("AGENTS.md", "prompt"), (".agents/rules/tests.md", "prompt"), ("crates/app/GEMINI.md", "nested")];
    assert_eq!(rows, expected.map(|(p, k)| (p.to_string(), k.to_string())), "{stdout}");

    // The last paragraph of the system prompt: the last file of the workspace's rules.
    let (ok, stdout, stderr) = run(&env, &["run", "@system"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Run the tests before you answer."), "{stdout}");
    let read = |path: &str| format!("@tool read {}", json!({"path": path}));
    let (ok, _, stderr) = run(&env, &["run", "--mode", "auto", &read("crates/app/src/lib.rs")]);
    assert!(ok, "{stderr}");
    // Once while the context holds them: also for a kernel that starts again.
    let (ok, _, stderr) = run(&env, &["kernel", "stop"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = run(&env, &["run", "-c", "--mode", "auto", &read("crates/app/src/lib.rs")]);
    assert!(ok, "{stderr}");
    let outputs = tool_outputs(&env);
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert!(outputs[0].contains("pub fn app()"), "{}", outputs[0]);
    assert!(outputs[0].contains("never touch the migrations"), "the first read brings the rules: {}", outputs[0]);
    assert!(!outputs[1].contains("never touch the migrations"), "once per conversation: {}", outputs[1]);
}

//! End to end: protected paths are decided by what a tool actually touches. Each test runs the
//! real binary with the mock model calling one tool in `auto` and tries a way around the
//! path-argument check (a search over `.`, a glob naming `.env`, a symlink into `.git` or out
//! of the workspace); the secret must not come back and nothing may be written. A workspace
//! holding superpi's own directories is refused whole.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::os::unix::fs::symlink;

use serde_json::{Value, json};
use superpi_tests::TestEnv;

const SECRET: &str = "hunter2-secret";

/// Runs `superpi run --mode auto` with the mock model calling `tool` with `args` once; the
/// call's result (is_error, output).
fn call(env: &TestEnv, tool: &str, args: Value) -> (bool, String) {
    let prompt = format!("@tool {tool} {args}");
    let out = env.command(&["run", "--mode", "auto", &prompt]).stdin(std::process::Stdio::null()).output().unwrap();
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let wire: String = db
        .query_row(
            "SELECT wire FROM events WHERE type = 'tool_completed' ORDER BY conversation_id DESC, seq DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("no tool result ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let event: Value = serde_json::from_str(&wire).unwrap();
    (event["is_error"].as_bool().unwrap(), event["output"].as_str().unwrap_or("").to_string())
}

fn env_with_secrets() -> TestEnv {
    let env = TestEnv::new();
    let ws = &env.workspace;
    std::fs::write(ws.join(".env"), format!("TOKEN={SECRET}\n")).unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), format!("[credential]\n\thelper = {SECRET}\n")).unwrap();
    std::fs::write(ws.join("notes.txt"), "TOKEN=public\n").unwrap();
    env
}

#[test]
fn search_and_listing_tools_skip_protected_paths_whatever_the_pattern_or_glob() {
    let env = env_with_secrets();
    symlink(env.workspace.join(".env"), env.workspace.join("innocent.txt")).unwrap();
    for (tool, args) in [
        ("grep", json!({"pattern": "TOKEN|helper"})),
        ("grep", json!({"pattern": "TOKEN", "glob": ".env"})),
        ("grep", json!({"pattern": "helper", "path": ".", "glob": "**/config"})),
        ("grep", json!({"pattern": "TOKEN", "glob": "innocent.txt"})),
    ] {
        let (is_error, output) = call(&env, tool, args.clone());
        assert!(!output.contains(SECRET), "{tool} {args}: {output}");
        assert!(!is_error, "{tool} {args}: {output}");
    }
    let (_, output) = call(&env, "grep", json!({"pattern": "TOKEN"}));
    assert!(output.contains("notes.txt"), "the search still works: {output}");
    let (_, output) = call(&env, "find", json!({"pattern": "*"}));
    assert!(!output.contains(".env") && !output.contains(".git") && !output.contains("innocent"), "{output}");
    assert!(output.contains("notes.txt"), "{output}");
    let (_, output) = call(&env, "ls", json!({}));
    assert!(!output.contains(".env") && !output.contains("innocent"), "{output}");
}

#[test]
fn a_symlink_inside_the_workspace_does_not_lead_to_a_protected_path() {
    let env = env_with_secrets();
    let ws = &env.workspace;
    symlink(ws.join(".git/config"), ws.join("config.txt")).unwrap();
    symlink(ws.join(".git/hooks"), ws.join("hooks")).unwrap();
    let (is_error, output) = call(&env, "read", json!({"path": "config.txt"}));
    assert!(is_error && !output.contains(SECRET), "{output}");
    let (is_error, output) = call(&env, "write", json!({"path": "hooks/pre-commit", "content": "#!/bin/sh\nevil\n"}));
    assert!(is_error, "{output}");
    assert!(!ws.join(".git/hooks/pre-commit").exists(), "a git hook was planted through a symlink");
    let (is_error, _) = call(&env, "edit", json!({"path": "config.txt", "old_string": SECRET, "new_string": "x"}));
    assert!(is_error);
    assert!(std::fs::read_to_string(ws.join(".git/config")).unwrap().contains(SECRET));
    // Out of the workspace: a fake ~/.ssh and superpi's config dir.
    std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
    std::fs::write(env.home.join(".ssh/id_rsa"), SECRET).unwrap();
    std::fs::create_dir_all(&env.locations.config_dir).unwrap();
    std::fs::write(env.locations.config_dir.join("gateway.json"), json!({"tokens": [SECRET]}).to_string()).unwrap();
    symlink(env.home.join(".ssh"), ws.join("ssh")).unwrap();
    symlink(env.locations.config_dir.join("gateway.json"), ws.join("gw.json")).unwrap();
    for path in ["ssh/id_rsa", "gw.json"] {
        let (is_error, output) = call(&env, "read", json!({ "path": path }));
        assert!(is_error && !output.contains(SECRET), "{path}: {output}");
    }
}

#[test]
fn a_workspace_holding_superpis_own_directories_is_refused_whole() {
    let mut env = env_with_secrets();
    // The config dir (settings, tokens) inside the workspace, as a careless setup might have it:
    // no tool runs there at all (file tools would also refuse the path; a shell could not).
    env.locations.config_dir = env.workspace.join(".superpi-config");
    std::fs::create_dir_all(&env.locations.config_dir).unwrap();
    std::fs::write(env.locations.config_dir.join("gateway.json"), json!({"tokens": [SECRET]}).to_string()).unwrap();
    let prompt = format!("@tool read {}", json!({"path": ".superpi-config/gateway.json"}));
    let out = env.command(&["run", "--mode", "auto", &prompt]).stdin(std::process::Stdio::null()).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stderr.contains("holds superpi's own directory") && stderr.contains("run superpi in a project directory"),
        "{stderr}"
    );
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert!(!env.database_path().exists() || no_tool_ran(&env), "a tool ran in a refused workspace");
}

fn no_tool_ran(env: &TestEnv) -> bool {
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let ran: i64 =
        db.query_row("SELECT count(*) FROM events WHERE type = 'tool_completed'", [], |r| r.get(0)).unwrap_or(0);
    ran == 0
}

#[test]
fn a_hard_link_to_a_protected_file_is_refused_like_the_file() {
    let env = env_with_secrets();
    let ws = &env.workspace;
    // The model's shell call makes the links (the names spelt so no rule reads them), and a
    // link that was already there, as a user might have left it.
    let (is_error, output) = call(
        &env,
        "bash",
        json!({"command": "p=.e; ln \"${p}nv\" linked.txt && ln .gi\"t\"/config cfg.txt && echo LINKED"}),
    );
    assert!(!is_error && output.contains("LINKED"), "the links were not made: {output}");
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    std::fs::hard_link(ws.join(".env"), ws.join("docs/readme.txt")).unwrap();
    symlink(ws.join("linked.txt"), ws.join("pointer.txt")).unwrap();
    for path in ["linked.txt", "cfg.txt", "docs/readme.txt", "pointer.txt"] {
        let (is_error, output) = call(&env, "read", json!({ "path": path }));
        assert!(is_error && !output.contains(SECRET), "read {path}: {output}");
        assert!(output.contains("hard link to the protected"), "read {path}: {output}");
        let (is_error, output) = call(&env, "edit", json!({"path": path, "old_string": SECRET, "new_string": "x"}));
        assert!(is_error && !output.contains(SECRET), "edit {path}: {output}");
        let (is_error, output) = call(&env, "write", json!({"path": path, "content": "TOKEN=planted\n"}));
        assert!(is_error, "write {path}: {output}");
    }
    assert_eq!(std::fs::read_to_string(ws.join(".env")).unwrap(), format!("TOKEN={SECRET}\n"));
    assert!(std::fs::read_to_string(ws.join(".git/config")).unwrap().contains(SECRET));
    let (is_error, output) = call(&env, "grep", json!({"pattern": "TOKEN|helper"}));
    assert!(!is_error && !output.contains(SECRET), "{output}");
    assert!(output.contains("notes.txt"), "the search still works: {output}");
    // Two names of a file nobody protects are read as before.
    std::fs::hard_link(ws.join("notes.txt"), ws.join("notes-again.txt")).unwrap();
    let (is_error, output) = call(&env, "read", json!({"path": "notes-again.txt"}));
    assert!(!is_error && output.contains("TOKEN=public"), "{output}");
}

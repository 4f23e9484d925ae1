//! End to end: external MCP servers from the user's settings, as tools of a `superpi run`
//! turn (the fixture server of src/bin/mcp_fixture.rs, through the real kernel and sandbox).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use serde_json::json;
use superpi_tests::TestEnv;

/// Writes the user's settings with these MCP servers.
fn servers(env: &TestEnv, servers: serde_json::Value) {
    let settings = json!({ "mcp_servers": servers });
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
}

fn fixture() -> String {
    env!("CARGO_BIN_EXE_mcp_fixture").to_string()
}

/// `superpi run PROMPT` in `mode`: (success, stdout, stderr).
fn run(env: &TestEnv, mode: &str, prompt: &str) -> (bool, String, String) {
    let out = env.command(&["run", "--mode", mode, prompt]).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn a_read_only_server_tool_round_trips_through_a_run() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture()}}));
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__fix__echo {"text":"hi"}"#);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("mcp__fix__echo returned: echo: hi"), "{stdout}\n{stderr}");
}

#[test]
fn a_server_that_does_not_start_is_a_notice_and_the_turn_goes_on() {
    let env = TestEnv::new();
    servers(
        &env,
        json!({
            "gone": {"command": "/nonexistent/mcp-server"},
            "dies": {"command": fixture(), "args": ["--fail"]},
        }),
    );
    let (ok, stdout, stderr) = run(&env, "accept-edits", "just answer");
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "just answer");
    assert!(stderr.contains("`gone`"), "{stderr}");
    assert!(stderr.contains("`dies`") && stderr.contains("refusing to start (--fail)"), "{stderr}");
}

#[test]
fn a_tool_without_read_only_hint_is_a_command_asked_in_accept_edits_and_confined_in_auto() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture()}}));
    let write = r#"@tool mcp__fix__write_file {"path":"note.txt","text":"from mcp"}"#;
    let (ok, _, stderr) = run(&env, "accept-edits", write);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("blocked"), "nobody answered the question, so it failed closed: {stderr}");
    assert!(!env.workspace.join("note.txt").exists());

    let (ok, _, stderr) = run(&env, "auto", write);
    assert!(ok, "{stderr}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("note.txt")).unwrap(), "from mcp");

    // Confined: nothing outside the workspace is writable, and the home's keys are unreadable.
    let outside = env.path().join("outside.txt");
    let escape = format!(r#"@tool mcp__fix__write_file {{"path":"{}","text":"x"}}"#, outside.display());
    let (ok, _, stderr) = run(&env, "auto", &escape);
    assert!(ok, "{stderr}");
    assert!(!outside.exists(), "the server wrote outside the workspace: {stderr}");
    assert!(stderr.contains("cannot write"), "{stderr}");
    std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
    std::fs::write(env.home.join(".ssh/id_rsa"), "SECRET KEY").unwrap();
    let steal = format!(r#"@tool mcp__fix__read_file {{"path":"{}"}}"#, env.home.join(".ssh/id_rsa").display());
    let (ok, stdout, stderr) = run(&env, "auto", &steal);
    assert!(ok, "{stderr}");
    assert!(!stdout.contains("SECRET KEY") && !stderr.contains("SECRET KEY"), "{stdout}\n{stderr}");
    assert!(stderr.contains("cannot read"), "{stderr}");
}

#[test]
fn servers_are_managed_with_superpi_mcp_and_listed_by_kernel_status() {
    let env = TestEnv::new();
    let cli = |args: &[&str]| {
        let out = env.command(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, _, stderr) = cli(&["mcp", "add", "fix", "--env", "FIXTURE_MODE=plain", "--", &fixture(), "--ignored-arg"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "add", "fix", "--", "/bin/true"]);
    assert!(!ok && stderr.contains("already"), "{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "add", "bad__name", "--", "/bin/true"]);
    assert!(!ok && stderr.contains("mcp_servers.bad__name"), "an invalid entry is refused: {stderr}");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.locations.config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        settings["mcp_servers"]["fix"],
        json!({"command": fixture(), "args": ["--ignored-arg"], "env": {"FIXTURE_MODE": "plain"}})
    );

    let (ok, stdout, _) = cli(&["mcp", "list"]);
    assert!(ok && stdout.contains("fix: ") && stdout.contains("no kernel is running"), "{stdout}");
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__fix__echo {"text":"managed"}"#);
    assert!(ok && stdout.contains("echo: managed"), "{stdout}\n{stderr}");

    let (ok, stdout, stderr) = cli(&["kernel", "status"]);
    assert!(ok, "{stderr}");
    let status: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let servers = status["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{status}");
    assert_eq!(servers[0]["name"], "fix");
    assert_eq!(servers[0]["state"], "running");
    assert_eq!(servers[0]["workspace"], env.workspace.canonicalize().unwrap().display().to_string());
    assert!(servers[0]["pid"].as_i64().unwrap() > 0);
    assert_eq!(servers[0]["tools"], json!(["mcp__fix__echo", "mcp__fix__write_file", "mcp__fix__read_file"]));
    let (ok, stdout, _) = cli(&["mcp", "list"]);
    assert!(ok && stdout.contains("running in ") && stdout.contains("mcp__fix__echo"), "{stdout}");

    let (ok, _, stderr) = cli(&["mcp", "remove", "fix"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "remove", "fix"]);
    assert!(!ok && stderr.contains("no MCP server `fix`"), "{stderr}");
    let (ok, stdout, _) = cli(&["mcp", "list"]);
    assert!(ok && stdout.contains("no MCP servers"), "{stdout}");
}

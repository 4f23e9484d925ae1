//! End to end: what a newcomer meets in their first hour from the README (issue 40), through
//! the real binary and the mock model. Usage errors exit 2 before a kernel is asked; `--json`
//! listings are arrays; `agui` and `gateway` keep their own default ports; the workspace is
//! the current directory, refused with the fix when it holds the home directory, and `-c`
//! stays in it; settings are read again at each turn, for every tool, and a settings error
//! fails the run as one.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::net::TcpListener;
use std::process::{Output, Stdio};

use serde_json::{Value, json};
use superpi_tests::TestEnv;

fn settings(env: &TestEnv, settings: Value) {
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
}

fn run(env: &TestEnv, args: &[&str]) -> Output {
    env.command(args).stdin(Stdio::null()).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `superpi run --output-format json` of `prompt` with `extra` flags: its result line.
fn result(env: &TestEnv, extra: &[&str], prompt: &str) -> Value {
    let mut args = vec!["run", "--output-format", "json"];
    args.extend_from_slice(extra);
    args.push(prompt);
    let out = run(env, &args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

/// The output of the latest stored `tool_completed`.
fn last_tool_output(env: &TestEnv) -> String {
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let wire: String = db
        .query_row(
            "SELECT wire FROM events WHERE type = 'tool_completed' ORDER BY conversation_id DESC, seq DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let event: Value = serde_json::from_str(&wire).unwrap();
    event["output"].as_str().unwrap_or_default().to_string()
}

#[test]
fn usage_errors_exit_2_before_a_kernel_is_asked() {
    let env = TestEnv::new();
    for args in [
        &["run", "--mode", "bogus", "hi"][..],
        &["run", "--effort", "extreme", "hi"],
        &["chat", "--mode", "bogus"],
        &["schedule", "add", "--cron", "61 * * * *", "x"],
        &["schedule", "add", "--cron", "0 7 * * *", "--tz", "Mars/Olympus", "x"],
    ] {
        let out = run(&env, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty(), "{args:?} says why");
    }
    assert!(!env.database_path().exists(), "no kernel was started for a usage error");
}

#[test]
fn agui_and_the_gateway_keep_their_own_default_ports() {
    let env = TestEnv::new();
    let help = |role: &str| String::from_utf8(run(&env, &[role, "--help"]).stdout).unwrap();
    assert!(help("agui").contains("[default: 4100]"), "{}", help("agui"));
    assert!(help("gateway").contains("[default: 4000]"), "{}", help("gateway"));
}

#[test]
fn json_listings_are_arrays() {
    let env = TestEnv::new();
    let listings = [
        &["harnesses", "--json"][..],
        &["mcp", "list", "--json"],
        &["session", "list", "--json"],
        &["rules", "--json"],
    ];
    for args in listings {
        let out = run(&env, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(doc.is_array(), "{args:?}: {doc}");
    }
    let out = run(&env, &["harnesses", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc.as_array().unwrap().iter().any(|h| h["id"] == "superpi-code"), "{doc}");
}

#[test]
fn a_directory_holding_home_is_refused_with_the_fix_and_exit_1() {
    let env = TestEnv::new();
    let out = env.command(&["run", "hello"]).current_dir(&env.home).stdin(Stdio::null()).output().unwrap();
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("refuses") && text.contains("project directory"), "{text}");
    assert!(out.stdout.is_empty(), "no answer: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn continue_takes_the_latest_conversation_of_this_workspace() {
    let env = TestEnv::new();
    let here = result(&env, &[], "one")["conversation_id"].as_i64().unwrap();
    let other = env.root.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let out = env.command(&["run", "two"]).current_dir(&other).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result(&env, &["-c"], "three")["conversation_id"].as_i64(), Some(here));
    // A workspace with no conversation yet: said, not another's continued.
    let fresh = env.root.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let out = env.command(&["run", "-c", "four"]).current_dir(&fresh).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no conversation in"), "{}", stderr(&out));
}

#[test]
fn a_settings_typo_fails_the_run_as_a_settings_error() {
    let env = TestEnv::new();
    assert!(run(&env, &["run", "hello"]).status.success(), "a kernel runs");
    settings(&env, json!({"permissions": {"alow": ["Bash(ls)"]}}));
    let out = run(&env, &["run", "hello"]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("the settings do not read") && text.contains("alow"), "{text}");
    assert!(!text.contains("MCP"), "{text}");
}

#[test]
fn a_tightened_network_policy_applies_to_every_tool_at_the_next_turn() {
    let env = TestEnv::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/page", listener.local_addr().unwrap().port());
    drop(listener);
    settings(&env, json!({"web": {"private_hosts": ["127.0.0.1"]}}));
    let fetch = format!("@tool web_fetch {}", json!({"url": url}));
    // The kernel starts with the policy `allow`: the fetch is tried (nothing listens).
    run(&env, &["run", "--harness", "superpi-assistant", &fetch]);
    assert!(!last_tool_output(&env).contains("network policy"), "{}", last_tool_output(&env));

    // The same kernel, the policy now `deny`: web_fetch and bash are both refused by it.
    settings(&env, json!({"network": {"policy": "deny"}, "web": {"private_hosts": ["127.0.0.1"]}}));
    let out = run(&env, &["run", "--harness", "superpi-assistant", &fetch]);
    let fetched = last_tool_output(&env);
    assert!(fetched.contains("refused by the network policy"), "{fetched}; {}", stderr(&out));
    let bash = format!("@tool bash {}", json!({"command": "true", "network": true}));
    let out = run(&env, &["run", "--mode", "auto", &bash]);
    let ran = last_tool_output(&env);
    assert!(ran.contains("network policy"), "{ran}; {}", stderr(&out));
}

/// `npm install` without network retries in silence until its deadline (issue #40 found only an
/// exit code at the end): the result says it tried the network and how to ask, from the sockets
/// the sandbox refused, not from what npm printed.
#[test]
fn npm_install_without_network_says_it_needed_the_network() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("package.json"), r#"{"name":"demo","version":"1.0.0"}"#).unwrap();
    let install = json!({"command": "npm install --no-audit --no-fund left-pad", "timeout": 10});
    let out = run(&env, &["run", "--mode", "auto", &format!("@tool bash {install}")]);
    let ran = last_tool_output(&env);
    assert!(ran.contains("tried to open an internet connection"), "{ran}; {}", stderr(&out));
    assert!(ran.contains("run it again with \"network\": true"), "{ran}; {}", stderr(&out));
}

#[test]
fn a_changed_sandbox_setting_says_it_needs_a_kernel_stop() {
    let env = TestEnv::new();
    let out = run(&env, &["run", "hello"]);
    assert!(!stderr(&out).contains("kernel stop"), "{}", stderr(&out));
    let extra = env.root.path().join("toolchain");
    std::fs::create_dir(&extra).unwrap();
    settings(&env, json!({"sandbox": {"extra_read_paths": [extra]}}));
    let out = run(&env, &["run", "hello"]);
    let text = stderr(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("sandbox.extra_read_paths") && text.contains("superpi kernel stop"), "{text}");
}

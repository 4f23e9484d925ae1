//! End to end: permission questions through a real kernel with the mock model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly and run git

use std::time::Duration;

use serde_json::json;
use superpi_client::{KernelClient, Subscription};
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{Event, EventBody};
use superpi_tests::TestEnv;

async fn setup(env: &TestEnv, mode: &str, harness: Option<&str>) -> (KernelClient, i64, Subscription) {
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let info = client
        .open(OpenParams {
            workspace: Some(env.workspace.display().to_string()),
            mode: Some(mode.into()),
            harness: harness.map(str::to_string),
            ..Default::default()
        })
        .await
        .unwrap();
    let sub = client.watch(WatchParams::live(info.conversation_id).interactive(true)).await.unwrap();
    (client, info.conversation_id, sub)
}

/// Runs a turn, answering each permission question with the next of `answers` (or leaving
/// it unanswered when `answers` runs out). Returns the turn's events.
async fn turn(client: &KernelClient, sub: &mut Subscription, conv: i64, prompt: &str, answers: &[&str]) -> Vec<Event> {
    let turn = client.submit_text(conv, prompt).await.unwrap();
    let mut answers = answers.iter();
    let mut events = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(20), sub.next()).await.expect("event in time").unwrap();
        if let EventBody::PermissionRequest { request_id, options, .. } = &ev.body {
            let ids: Vec<&str> = options.iter().map(|o| o.option_id.as_str()).collect();
            assert_eq!(ids[..4], ["allow_once", "allow_always", "reject_once", "reject_always"]);
            if let Some(answer) = answers.next() {
                client.respond_permission(request_id, answer).await.unwrap();
            }
        }
        let end = ev.turn_id == Some(turn.turn_id) && ev.body.is_turn_end();
        events.push(ev);
        if end {
            return events;
        }
    }
}

fn count(events: &[Event], ty: &str) -> usize {
    events.iter().filter(|e| e.type_name() == ty).count()
}

fn tool_results(events: &[Event]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolCompleted { is_error, output, .. } => {
                Some((*is_error, output.as_str().unwrap_or("").to_string()))
            }
            _ => None,
        })
        .collect()
}

const TOUCH: &str = "@tool bash {\"command\": \"touch made-by-bash\"}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_once_runs_the_call_and_the_next_call_is_asked_again() {
    let env = TestEnv::new();
    let (client, conv, mut sub) = setup(&env, "accept-edits", None).await;
    let events = turn(&client, &mut sub, conv, TOUCH, &["allow_once"]).await;
    assert_eq!(count(&events, "permission_request"), 1);
    assert_eq!(count(&events, "ui_resolved"), 1);
    assert!(!tool_results(&events)[0].0, "{:?}", tool_results(&events));
    assert!(env.workspace.join("made-by-bash").exists());
    let events = turn(&client, &mut sub, conv, TOUCH, &["allow_once"]).await;
    assert_eq!(count(&events, "permission_request"), 1, "allow_once is not remembered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_once_blocks_the_call() {
    let env = TestEnv::new();
    let (client, conv, mut sub) = setup(&env, "accept-edits", None).await;
    let events = turn(&client, &mut sub, conv, TOUCH, &["reject_once"]).await;
    assert_eq!(count(&events, "tool_blocked"), 1);
    assert!(tool_results(&events)[0].0);
    assert!(!env.workspace.join("made-by-bash").exists());
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "the turn goes on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_is_not_asked_again_in_this_session() {
    let env = TestEnv::new();
    let (client, conv, mut sub) = setup(&env, "accept-edits", None).await;
    let events = turn(&client, &mut sub, conv, TOUCH, &["allow_always"]).await;
    assert_eq!(count(&events, "permission_request"), 1);
    let events = turn(&client, &mut sub, conv, TOUCH, &[]).await;
    assert_eq!(count(&events, "permission_request"), 0, "allow_always holds for the session");
    assert!(!tool_results(&events)[0].0);
    assert!(!env.locations.config_dir.join("settings.json").exists(), "never written to a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_answers_outlive_the_kernel() {
    let env = TestEnv::new();
    let (client, conv, mut sub) = setup(&env, "accept-edits", None).await;
    let rm = "@tool bash {\"command\": \"rm -f made-by-bash\"}";
    turn(&client, &mut sub, conv, TOUCH, &["allow_always"]).await;
    turn(&client, &mut sub, conv, rm, &["reject_always"]).await;
    env.kill_kernel();
    drop(sub);
    drop(client);

    // The next client autostarts a new kernel, which loads the answers with the conversation.
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    client.open(OpenParams { conversation_id: Some(conv), ..Default::default() }).await.unwrap();
    let watch = WatchParams::live(conv).interactive(true);
    let mut sub = client.watch(watch).await.unwrap();
    std::fs::remove_file(env.workspace.join("made-by-bash")).unwrap();
    let events = turn(&client, &mut sub, conv, TOUCH, &[]).await;
    assert_eq!(count(&events, "permission_request"), 0, "allow_always holds after a restart");
    assert!(env.workspace.join("made-by-bash").exists());
    let events = turn(&client, &mut sub, conv, rm, &[]).await;
    assert_eq!(count(&events, "permission_request"), 0, "reject_always holds after a restart");
    assert_eq!(count(&events, "tool_blocked"), 1);
    assert!(env.workspace.join("made-by-bash").exists());
    assert!(!env.locations.config_dir.join("settings.json").exists(), "never written to a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_is_not_an_option_fails_closed() {
    let env = TestEnv::new();
    let (client, conv, mut sub) = setup(&env, "accept-edits", None).await;
    let events = turn(&client, &mut sub, conv, TOUCH, &["yes please"]).await;
    assert_eq!(count(&events, "tool_blocked"), 1);
    assert!(!env.workspace.join("made-by-bash").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_question_times_out_and_fails_closed() {
    let env = TestEnv::new();
    std::fs::write(
        env.locations.config_dir.join("settings.json"),
        json!({"permissions": {"question_timeout_secs": 1}}).to_string(),
    )
    .unwrap();
    let (client, conv, mut sub) = setup(&env, "accept-edits", None).await;
    let events = turn(&client, &mut sub, conv, TOUCH, &[]).await;
    assert_eq!(count(&events, "permission_request"), 1);
    let resolved = events.iter().find_map(|e| match &e.body {
        EventBody::UiResolved { outcome, .. } => Some(outcome.clone()),
        _ => None,
    });
    assert_eq!(resolved.unwrap()["outcome"], "timeout");
    assert_eq!(count(&events, "tool_blocked"), 1);
    assert!(!env.workspace.join("made-by-bash").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nobody_to_ask_the_call_fails_closed_at_once() {
    let env = TestEnv::new();
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let (conv, mut sub) = superpi_tests::open_and_watch(&client, &env.workspace, Some("accept-edits"), false).await;
    let events = turn(&client, &mut sub, conv, TOUCH, &[]).await;
    assert_eq!(count(&events, "permission_request"), 0);
    assert_eq!(count(&events, "tool_blocked"), 1);
    assert!(!env.workspace.join("made-by-bash").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_question_cancels_it_and_the_turn() {
    let env = TestEnv::new();
    let (client, conv, mut sub) = setup(&env, "accept-edits", None).await;
    let turn_id = client.submit_text(conv, TOUCH).await.unwrap().turn_id;
    loop {
        let ev = sub.next().await.unwrap();
        if matches!(ev.body, EventBody::PermissionRequest { .. }) {
            break;
        }
    }
    client.cancel(conv).await.unwrap();
    let mut saw_resolved = false;
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), sub.next()).await.unwrap().unwrap();
        if let EventBody::UiResolved { outcome, .. } = &ev.body {
            assert_eq!(outcome["outcome"], "cancelled");
            saw_resolved = true;
        }
        if ev.turn_id == Some(turn_id) && ev.body.is_turn_end() {
            assert!(matches!(ev.body, EventBody::TurnCancelled {}));
            break;
        }
    }
    assert!(saw_resolved);
    assert!(!env.workspace.join("made-by-bash").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_planner_refuses_a_write_whatever_mode_is_asked_for() {
    let env = TestEnv::new();
    let (client, conv, mut sub) = setup(&env, "auto", Some("superpi-planner")).await;
    let info = client.open(OpenParams { conversation_id: Some(conv), ..Default::default() }).await.unwrap();
    assert_eq!(info.mode, "plan");
    assert_eq!(info.max_mode, "plan");
    let events =
        turn(&client, &mut sub, conv, "@tool write {\"path\": \"plan.txt\", \"content\": \"x\"}", &["allow_always"])
            .await;
    assert_eq!(count(&events, "permission_request"), 0, "not askable");
    assert_eq!(count(&events, "tool_blocked"), 1);
    assert!(!env.workspace.join("plan.txt").exists());
    client.set_mode(conv, "auto").await.unwrap();
    let info = client.open(OpenParams { conversation_id: Some(conv), ..Default::default() }).await.unwrap();
    assert_eq!(info.mode, "plan", "the ceiling holds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_caller_only_tightens_and_the_workspace_boundary_is_never_askable() {
    let env = TestEnv::new();
    let mut opts = env.connect_options("test");
    opts.remote = true;
    let client = KernelClient::connect(&opts).await.unwrap();
    let info = client
        .open(OpenParams {
            workspace: Some(env.workspace.display().to_string()),
            mode: Some("auto".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(info.mode, "accept-edits");
    let mut sub = client.watch(WatchParams::live(info.conversation_id).interactive(true)).await.unwrap();
    let outside = env.path().join("outside.txt");
    let prompt = format!("@tool write {{\"path\": {:?}, \"content\": \"x\"}}", outside.display().to_string());
    let events = turn(&client, &mut sub, info.conversation_id, &prompt, &["allow_once"]).await;
    assert_eq!(count(&events, "permission_request"), 0);
    assert_eq!(count(&events, "tool_blocked"), 1);
    assert!(!outside.exists());
}

/// `session.open`'s `mcp_servers` are commands the kernel's user runs: a remote principal (a
/// token over rpc or the gateway) may not attach them, to a new conversation or an existing
/// one; a local frontend may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_local_caller_attaches_mcp_servers() {
    let env = TestEnv::new();
    let server = || superpi_proto::method::McpServerParam {
        name: "editor".into(),
        command: "/bin/true".into(),
        ..Default::default()
    };
    let workspace = Some(env.workspace.display().to_string());
    // A token's principal over rpc (the frontend names it in its hello).
    let mut opts = env.connect_options("rpc");
    opts.remote = true;
    opts.principal = "key-0123456789abcdef".into();
    let remote = KernelClient::connect(&opts).await.unwrap();
    let refused = remote
        .open(OpenParams { workspace: workspace.clone(), mcp_servers: vec![server()], ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(superpi_proto::message::codes::FORBIDDEN), "{refused}");
    assert!(refused.to_string().contains("a remote caller"), "{refused}");
    let conv = remote.open(OpenParams { workspace, ..Default::default() }).await.unwrap().conversation_id;
    let again = OpenParams { conversation_id: Some(conv), mcp_servers: vec![server()], ..Default::default() };
    let refused = remote.open(again).await.unwrap_err();
    assert_eq!(refused.code(), Some(superpi_proto::message::codes::FORBIDDEN), "{refused}");

    // An editor over ACP: a remote mode ceiling, but the kernel's own user.
    let mut editor = env.connect_options("acp");
    editor.remote = true;
    let local = KernelClient::connect(&editor).await.unwrap();
    let opened = local
        .open(OpenParams {
            workspace: Some(env.workspace.display().to_string()),
            mcp_servers: vec![server()],
            ..Default::default()
        })
        .await;
    assert!(opened.is_ok(), "{opened:?}");
}

/// The stored events of every conversation: (type, wire JSON).
fn stored_events(env: &TestEnv) -> Vec<(String, serde_json::Value)> {
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let mut stmt = db.prepare("SELECT type, wire FROM events ORDER BY conversation_id, seq").unwrap();
    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|row| {
            let (ty, wire) = row.unwrap();
            (ty, serde_json::from_str(&wire).unwrap())
        })
        .collect()
}

/// `superpi run --mode MODE` with the mock model calling bash once per command line, and no
/// answer on stdin: a question would be rejected. Returns the outputs of the bash calls.
fn run_bash(env: &TestEnv, mode: &str, lines: &[&str]) -> Vec<(bool, String)> {
    let prompt: Vec<String> = lines.iter().map(|line| format!("@tool bash {}", json!({ "command": line }))).collect();
    let out =
        env.command(&["run", "--mode", mode, &prompt.join("\n")]).stdin(std::process::Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(!stderr.contains("? permission"), "asked: {stderr}");
    let events = stored_events(env);
    assert_eq!(events.iter().filter(|(ty, _)| ty == "permission_request").count(), 0);
    events
        .iter()
        .filter(|(ty, _)| ty == "tool_completed")
        .map(|(_, e)| (e["is_error"].as_bool().unwrap(), e["output"].as_str().unwrap_or("").to_string()))
        .collect()
}

#[test]
fn read_only_commands_run_without_a_question_in_accept_edits() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("a.txt"), "alpha-marker\n").unwrap();
    let results = run_bash(&env, "accept-edits", &["ls -la", "ls -la; cat a.txt"]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results.iter().all(|(is_error, _)| !is_error), "{results:?}");
    assert!(results[0].1.contains("a.txt"), "{results:?}");
    assert!(results[1].1.contains("a.txt") && results[1].1.contains("alpha-marker"), "{results:?}");
}

#[test]
fn plan_mode_runs_git_status() {
    let env = TestEnv::new();
    let init = std::process::Command::new("git").args(["init", "-q"]).current_dir(&env.workspace).status().unwrap();
    assert!(init.success());
    std::fs::write(env.workspace.join("new.txt"), "x").unwrap();
    let results = run_bash(&env, "plan", &["git status"]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(!results[0].0 && results[0].1.contains("new.txt"), "{results:?}");
}

/// `tool.call` with `consented`: the caller's word answers what would be asked, within the
/// caller's mode; refusals that are never askable stay refused, and say so in
/// `details.blocked`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_call_runs_an_askable_call_on_consent_and_nothing_more() {
    let env = TestEnv::new();
    std::fs::write(
        env.locations.config_dir.join("settings.json"),
        r#"{"permissions": {"deny": ["rm -rf *"]}, "network": {"policy": "deny"}}"#,
    )
    .unwrap();
    let mut opts = env.connect_options("test");
    opts.remote = true;
    let client = KernelClient::connect(&opts).await.unwrap();
    let ws = env.workspace.display().to_string();
    let call = |name: &str, arguments: serde_json::Value, consented: bool, mode: Option<&str>| {
        let mut params = json!({"name": name, "arguments": arguments, "workspace": ws, "consented": consented});
        if let Some(mode) = mode {
            params["mode"] = json!(mode);
        }
        let client = client.clone();
        async move { client.call("tool.call", params).await.unwrap() }
    };
    let touch = json!({"command": "touch made.txt"});

    // Askable in the remote mode (accept-edits): refused without consent, marked askable.
    let refused = call("bash", touch.clone(), false, None).await;
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(refused["details"]["blocked"]["rule"], "unanswered", "{refused}");
    assert!(refused["details"]["blocked"]["risk"].is_string(), "{refused}");
    assert!(!env.workspace.join("made.txt").exists());
    // With consent it runs.
    let ran = call("bash", touch.clone(), true, None).await;
    assert_eq!(ran["is_error"], false, "{ran}");
    assert!(env.workspace.join("made.txt").exists());

    // Never askable, whatever the caller says: each with its rule and no risk.
    std::fs::write(env.workspace.join("keep.txt"), "k").unwrap();
    let outside = env.path().join("outside.txt");
    let refusals = [
        ("bash", json!({"command": "rm -rf keep.txt"}), None, "deny_list"),
        ("write", json!({"path": outside.display().to_string(), "content": "x"}), None, "workspace"),
        ("write", json!({"path": ".env", "content": "SECRET=1"}), None, "protected_path"),
        ("bash", json!({"command": "touch net.txt", "network": true}), None, "network"),
        ("bash", json!({"command": "touch plan.txt"}), Some("plan"), "mode"),
    ];
    for (tool, arguments, mode, rule) in refusals {
        let result = call(tool, arguments.clone(), true, mode).await;
        assert_eq!(result["is_error"], true, "{arguments}: {result}");
        assert_eq!(result["details"]["blocked"]["rule"], rule, "{arguments}: {result}");
        assert!(result["details"]["blocked"].get("risk").is_none(), "{result}");
    }
    assert!(env.workspace.join("keep.txt").exists());
    assert!(!outside.exists() && !env.workspace.join(".env").exists());
    assert!(!env.workspace.join("net.txt").exists() && !env.workspace.join("plan.txt").exists());

    // A workspace that says questions are put to nobody takes no consent either.
    std::fs::create_dir_all(env.workspace.join(".superpi")).unwrap();
    std::fs::write(env.workspace.join(".superpi/settings.json"), r#"{"permissions": {"ask": false}}"#).unwrap();
    let result = call("bash", json!({"command": "touch again.txt"}), true, None).await;
    assert_eq!(result["details"]["blocked"]["rule"], "unanswered", "{result}");
    assert!(!env.workspace.join("again.txt").exists());
}

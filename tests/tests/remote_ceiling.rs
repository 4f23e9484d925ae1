//! End to end: a remote caller acts at most at the remote mode ceiling at every step (its
//! submits, its direct tool calls, its answers to questions), whatever mode the conversation
//! has stored; and question ids cannot be guessed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::time::Duration;

use serde_json::json;
use superpi_client::{ClientError, KernelClient, Subscription};
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{Event, EventBody};
use superpi_tests::TestEnv;

const TOUCH: &str = "@tool bash {\"command\": \"touch made-by-bash\"}";

async fn client(env: &TestEnv, remote: bool) -> KernelClient {
    let mut opts = env.connect_options(if remote { "remote-test" } else { "test" });
    opts.remote = remote;
    KernelClient::connect(&opts).await.unwrap()
}

/// A conversation opened by the local terminal in `mode`.
async fn open_local(client: &KernelClient, env: &TestEnv, mode: &str) -> i64 {
    let open = OpenParams {
        workspace: Some(env.workspace.display().to_string()),
        mode: Some(mode.into()),
        ..Default::default()
    };
    let info = client.open(open).await.unwrap();
    assert_eq!(info.mode, mode);
    info.conversation_id
}

async fn watch(client: &KernelClient, conv: i64, interactive: bool) -> Subscription {
    let params = WatchParams::live(conv).interactive(interactive);
    client.watch(params).await.unwrap()
}

async fn next(sub: &mut Subscription) -> Event {
    tokio::time::timeout(Duration::from_secs(20), sub.next()).await.expect("an event in time").unwrap()
}

async fn until_turn_end(sub: &mut Subscription, turn_id: i64) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let ev = next(sub).await;
        let end = ev.turn_id == Some(turn_id) && ev.body.is_turn_end();
        events.push(ev);
        if end {
            return events;
        }
    }
}

fn blocked(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(e.body, EventBody::ToolBlocked { .. })).count()
}

/// Runs a turn of `client`, answering every question with `answer`; returns the questions' ids.
async fn turn_answering(client: &KernelClient, sub: &mut Subscription, conv: i64, answer: &str) -> Vec<String> {
    let turn = client.submit_text(conv, TOUCH).await.unwrap().turn_id;
    let mut ids = Vec::new();
    loop {
        let ev = next(sub).await;
        if let EventBody::PermissionRequest { request_id, .. } = &ev.body {
            client.respond_permission(request_id, answer).await.unwrap();
            ids.push(request_id.clone());
        }
        if ev.turn_id == Some(turn) && ev.body.is_turn_end() {
            return ids;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_submit_into_a_conversation_left_in_auto_runs_at_the_remote_ceiling() {
    let env = TestEnv::new();
    let local = client(&env, false).await;
    let conv = open_local(&local, &env, "auto").await;
    let mut sub = watch(&local, conv, false).await;

    // The terminal's own turn runs in auto: the command runs without a question.
    let turn = local.submit_text(conv, TOUCH).await.unwrap().turn_id;
    let events = until_turn_end(&mut sub, turn).await;
    assert_eq!(blocked(&events), 0, "{events:?}");
    std::fs::remove_file(env.workspace.join("made-by-bash")).unwrap();

    // A remote caller (the gateway naming this conversation) submits the same: in
    // accept-edits the command is asked about, nobody can answer, and it fails closed.
    let remote = client(&env, true).await;
    let info = remote.open(OpenParams { conversation_id: Some(conv), ..Default::default() }).await.unwrap();
    assert_eq!(info.mode, "auto", "the stored mode is the terminal's");
    let turn = remote.submit_text(conv, TOUCH).await.unwrap().turn_id;
    let events = until_turn_end(&mut sub, turn).await;
    assert_eq!(blocked(&events), 1, "the remote turn ran above its ceiling: {events:?}");
    assert!(!env.workspace.join("made-by-bash").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_direct_tool_call_runs_at_the_remote_ceiling() {
    let env = TestEnv::new();
    let remote = client(&env, true).await;
    let call = |mode: &'static str| {
        json!({
            "name": "bash",
            "arguments": {"command": "touch made-by-bash"},
            "mode": mode,
            "workspace": env.workspace.display().to_string(),
        })
    };
    let result = remote.call("tool.call", call("auto")).await.unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    assert!(!env.workspace.join("made-by-bash").exists());
    let local = client(&env, false).await;
    let result = local.call("tool.call", call("auto")).await.unwrap();
    assert_eq!(result["is_error"], false, "the local caller may: {result}");
    assert!(env.workspace.join("made-by-bash").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_answer_cannot_allow_what_the_remote_ceiling_refuses() {
    let env = TestEnv::new();
    // Remote callers may only read (plan); the terminal works in accept-edits.
    std::fs::write(
        env.locations.config_dir.join("settings.json"),
        json!({"remote": {"default_mode": "plan", "max_mode": "plan"}}).to_string(),
    )
    .unwrap();
    let local = client(&env, false).await;
    let conv = open_local(&local, &env, "accept-edits").await;
    let mut local_sub = watch(&local, conv, true).await;
    let remote = client(&env, true).await;
    remote.open(OpenParams { conversation_id: Some(conv), ..Default::default() }).await.unwrap();
    let mut remote_sub = watch(&remote, conv, true).await;

    let turn = local.submit_text(conv, TOUCH).await.unwrap().turn_id;
    let request_id = loop {
        if let EventBody::PermissionRequest { request_id, .. } = next(&mut remote_sub).await.body {
            break request_id;
        }
    };
    // Plan refuses the command: the remote frontend's allow is refused, the question stays open.
    for answer in ["allow_once", "allow_always"] {
        match remote.respond_permission(&request_id, answer).await {
            Err(ClientError::Kernel(err)) => assert_eq!(err.code, superpi_proto::message::codes::FORBIDDEN),
            other => panic!("a remote {answer} above the ceiling was taken: {other:?}"),
        }
    }
    // A refusal is any caller's to give.
    let answered = remote.respond_permission(&request_id, "reject_once").await.unwrap();
    assert_eq!(answered["accepted"], true);
    let events = until_turn_end(&mut local_sub, turn).await;
    assert_eq!(blocked(&events), 1, "{events:?}");
    assert!(!env.workspace.join("made-by-bash").exists());

    // The terminal itself may still allow it.
    turn_answering(&local, &mut local_sub, conv, "allow_once").await;
    assert!(env.workspace.join("made-by-bash").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn question_ids_are_128_random_bits() {
    let env = TestEnv::new();
    let local = client(&env, false).await;
    let conv = open_local(&local, &env, "accept-edits").await;
    let mut sub = watch(&local, conv, true).await;
    let mut ids = turn_answering(&local, &mut sub, conv, "reject_once").await;
    ids.extend(turn_answering(&local, &mut sub, conv, "reject_once").await);
    assert_eq!(ids.len(), 2);
    for id in &ids {
        let hex = id.strip_prefix("perm-").unwrap_or_else(|| panic!("{id}"));
        assert_eq!(hex.len(), 32, "{id}");
        assert!(hex.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
    }
    // Consecutive ids share no counter: they differ in many of their 128 bits.
    let differing = ids[0].bytes().zip(ids[1].bytes()).filter(|(a, b)| a != b).count();
    assert!(differing > 16, "{ids:?}");
}

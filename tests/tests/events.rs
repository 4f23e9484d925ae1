//! End to end: the events a conversation's actor and its tool pipeline publish, through a real
//! kernel and the mock model: `state_changed` over a turn that asks a person, and
//! `tool_started.overwritten_keys` naming what a `before_tool` hook rewrote.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::json;
use superpi_client::{KernelClient, Subscription};
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{Event, EventBody};
use superpi_tests::TestEnv;
use superpi_tests::wait::PATIENCE;

async fn open(env: &TestEnv, mode: &str) -> (KernelClient, i64, Subscription) {
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let info = client
        .open(OpenParams {
            workspace: Some(env.workspace.display().to_string()),
            mode: Some(mode.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let sub = client.watch(WatchParams::live(info.conversation_id).interactive(true)).await.unwrap();
    (client, info.conversation_id, sub)
}

/// The events up to and including the first that `last` accepts, answering each permission
/// question with `allow_once` when a `client` is given.
async fn events_until(
    client: Option<&KernelClient>,
    sub: &mut Subscription,
    last: impl Fn(&Event) -> bool,
) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let ev = tokio::time::timeout(PATIENCE, sub.next()).await.expect("an event in time").unwrap();
        if let (Some(client), EventBody::PermissionRequest { request_id, .. }) = (client, &ev.body) {
            client.respond_permission(request_id, "allow_once").await.unwrap();
        }
        let done = last(&ev);
        events.push(ev);
        if done {
            return events;
        }
    }
}

fn status(ev: &Event) -> Option<&str> {
    match &ev.body {
        EventBody::StateChanged { status } => Some(status),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_changed_follows_a_turn_that_waits_for_a_person() {
    let env = TestEnv::new();
    let (client, conv, mut sub) = open(&env, "accept-edits").await;
    client.submit_text(conv, r#"@tool bash {"command": "touch asked.txt"}"#).await.unwrap();
    let events = events_until(Some(&client), &mut sub, |e| status(e) == Some("idle")).await;
    let told: Vec<&str> = events.iter().filter_map(status).collect();
    assert_eq!(told, ["running", "waiting", "running", "idle"]);
    let at = |pred: &dyn Fn(&Event) -> bool| events.iter().position(pred).unwrap();
    let turn_started = at(&|e| e.type_name() == "turn_started");
    let running = at(&|e| status(e) == Some("running"));
    let asked = at(&|e| e.type_name() == "permission_request");
    let waiting = at(&|e| status(e) == Some("waiting"));
    let resolved = at(&|e| e.type_name() == "ui_resolved");
    let completed = at(&|e| e.type_name() == "turn_completed");
    assert!(turn_started < running && running < asked && asked < waiting, "{:?}", types(&events));
    let running_again = events.iter().rposition(|e| status(e) == Some("running")).unwrap();
    assert!(waiting < running_again && running_again < resolved, "{:?}", types(&events));
    assert!(completed < events.len() - 1, "idle comes after the turn's end: {:?}", types(&events));
    assert!(env.workspace.join("asked.txt").exists());
    // Stored: a watcher from the start replays the same states.
    let mut replay = client.watch(WatchParams::after(conv, 0)).await.unwrap();
    let replayed = events_until(None, &mut replay, |e| status(e) == Some("idle")).await;
    let stored: Vec<&str> = replayed.iter().filter_map(status).collect();
    assert_eq!(stored, ["running", "waiting", "running", "idle"]);
}

fn types(events: &[Event]) -> Vec<&str> {
    events.iter().map(Event::type_name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_started_names_the_keys_a_before_tool_hook_rewrote() {
    let env = TestEnv::new();
    let answer = json!({"arguments": {"command": "echo rewritten > rewritten.txt", "timeout": 30}}).to_string();
    let settings = json!({"hooks": {"before_tool": [
        {"name": "rewrite", "command": format!("printf '%s' '{answer}'"), "tools": ["bash"]}
    ]}});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    let (client, conv, mut sub) = open(&env, "auto").await;
    client.submit_text(conv, r#"@tool bash {"command": "echo original > original.txt", "timeout": 30}"#).await.unwrap();
    let events = events_until(Some(&client), &mut sub, |e| e.body.is_turn_end()).await;
    let started = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolStarted { arguments, overwritten_keys, .. } => {
                Some((arguments.clone(), overwritten_keys.clone()))
            }
            _ => None,
        })
        .expect("tool_started");
    // `timeout` was set to what it was: not overwritten.
    assert_eq!(started.1, ["command"]);
    assert_eq!(started.0["command"], "echo rewritten > rewritten.txt");
    // The call ran (as rewritten) before the turn ended.
    assert!(env.workspace.join("rewritten.txt").exists(), "{:?}", types(&events));
    assert!(!env.workspace.join("original.txt").exists(), "the model's command did not run");
}

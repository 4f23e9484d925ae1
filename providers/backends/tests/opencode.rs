//! OpenCode itself (`opencode serve`), at the version `.ci/run` pins, driven over its HTTP API
//! through the sandbox against the OpenAI-compatible fake (superpi's provider, written into
//! OpenCode's configuration) with no network beyond 127.0.0.1. Skipped, saying so, when the
//! program is not installed in the test cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use superpi_backends::{Approval, BackendEvent, BackendKind, Endpoint, Servers, TurnSpec};
use superpi_policy::Mode;
use superpi_proto::ContentBlock;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{FakeServer, OpenAiFake};
use superpi_providers::testing::rules::Vendor;

use crate::common;

use common::{env, run, session, spec};
use superpi_tests::{is_zombie as gone, wait};

fn endpoint(fake: &FakeServer) -> Endpoint {
    Endpoint {
        api: "openai".into(),
        base_url: fake.base_url(Vendor::Openai),
        api_key: Some(superpi_providers::testing::fakes::FAKE_KEY.into()),
        model: "fake-model".into(),
    }
}

fn bash(command: &str) -> Answer {
    Answer::tool_call("bash", json!({"command": command, "description": "write a marker"}))
}

fn calls(events: &[BackendEvent]) -> Vec<(&str, &str, &serde_json::Value)> {
    let blocks = events.iter().flat_map(|e| match e {
        BackendEvent::Message { content } => content.iter().collect(),
        _ => Vec::new(),
    });
    blocks
        .filter_map(|b| match b {
            ContentBlock::ToolCall { id, name, arguments } => Some((id.as_str(), name.as_str(), arguments)),
            _ => None,
        })
        .collect()
}

/// One server for every turn of the workspace: a session that continues, a command that runs
/// in `auto`, a command refused in `accept-edits` (OpenCode asks; the refusal is its result
/// and the model goes on), no shell in `plan`, and the requests OpenCode sent passing the Chat
/// Completions rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_runs_a_continued_session_a_command_and_a_refused_question() {
    let Some(program) = common::program(BackendKind::Opencode) else { return };
    let env = env();
    let fake = OpenAiFake::start(vec![
        Answer::text("noted"),
        bash("echo from-opencode > marker.txt"),
        Answer::text("wrote it"),
        bash("echo refused > refused.txt"),
        Answer::text("could not"),
    ])
    .await
    .unwrap();
    let servers = Servers::default();
    let turn_spec = |mode, prompt, resume| TurnSpec {
        resume,
        env: Vec::new(),
        endpoint: Some(endpoint(&fake)),
        ..spec(&env, BackendKind::Opencode, &program, &fake, mode, prompt)
    };
    let mut turn = servers.start(&env.sandbox, turn_spec(Mode::Auto, "the colour is blue", None)).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    let id = session(&events);
    let Some(BackendEvent::End { result, usage, .. }) = events.last() else { panic!("{events:?}") };
    assert_eq!(result, "noted");
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0, "{usage:?}");
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            BackendEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "noted", "{events:?}");

    // The next turn continues the session and runs a command (no question in `auto`).
    let next = turn_spec(Mode::Auto, "write the marker", Some(id.clone()));
    let mut turn = servers.start(&env.sandbox, next).await.unwrap();
    let events = run(&mut turn, Approval::Deny { message: "no".into() }).await;
    assert_eq!(session(&events), id);
    assert!(!events.iter().any(|e| matches!(e, BackendEvent::ApprovalRequest(_))), "{events:?}");
    let calls = calls(&events);
    let [(call_id, "bash", arguments)] = calls.as_slice() else { panic!("{events:?}") };
    assert_eq!(arguments["command"], "echo from-opencode > marker.txt");
    assert!(
        events.iter().any(
            |e| matches!(e, BackendEvent::ToolResult { tool_call_id, is_error: false, .. } if tool_call_id == call_id)
        ),
        "{events:?}"
    );
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "wrote it"), "{events:?}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("marker.txt")).unwrap(), "from-opencode\n");
    let accepted = fake.accepted();
    let resumed = accepted[1].to_string();
    assert!(resumed.contains("the colour is blue") && resumed.contains("noted"), "{resumed}");

    // In accept-edits the command is asked about; refused, it does not run.
    let refused = turn_spec(Mode::AcceptEdits, "write another", Some(id.clone()));
    let mut turn = servers.start(&env.sandbox, refused).await.unwrap();
    let events = run(&mut turn, Approval::Deny { message: "not now".into() }).await;
    let asked = events.iter().find_map(|e| match e {
        BackendEvent::ApprovalRequest(request) => Some(request.clone()),
        _ => None,
    });
    let asked = asked.unwrap_or_else(|| panic!("no question in {events:?}"));
    assert_eq!(asked.tool_name, "bash");
    assert_eq!(asked.input["command"], "echo refused > refused.txt", "{asked:?}");
    assert!(events.iter().any(|e| matches!(e, BackendEvent::ToolResult { is_error: true, .. })), "{events:?}");
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "could not"), "{events:?}");
    assert!(!env.workspace.join("refused.txt").exists());

    // In plan no command runs: the shell is not offered, and a call to it fails (OpenCode
    // answers it through its `invalid` tool).
    fake.push(bash("echo planned > planned.txt"));
    fake.push(Answer::text("planned"));
    let plan = turn_spec(Mode::Plan, "and now?", Some(id.clone()));
    let mut turn = servers.start(&env.sandbox, plan).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(!events.iter().any(|e| matches!(e, BackendEvent::ApprovalRequest(_))), "{events:?}");
    let failed = events.iter().any(|e| {
        matches!(e, BackendEvent::ToolResult { is_error: true, output, .. } if output.contains("unavailable tool 'bash'"))
    });
    assert!(failed, "{events:?}");
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "planned"), "{events:?}");
    assert!(!env.workspace.join("planned.txt").exists());
    let offered = fake.accepted().last().unwrap()["tools"].to_string();
    assert!(!offered.contains("\"bash\"") && offered.contains("\"read\""), "{offered}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    assert_eq!(servers.started(), 1, "every turn ran on one server");
}

/// Dropping a turn aborts the session's work: the model request in flight is closed, and the
/// session takes the next prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_turn_aborts_it_and_the_session_goes_on() {
    let Some(program) = common::program(BackendKind::Opencode) else { return };
    let env = env();
    let held = superpi_providers::testing::Reply { hold: true, ..superpi_providers::testing::Reply::stream(b"", 1) };
    let fake = OpenAiFake::start(vec![Answer::Reply(held), Answer::text("back again")]).await.unwrap();
    let servers = Servers::default();
    let turn_spec = |prompt, resume| TurnSpec {
        resume,
        env: Vec::new(),
        endpoint: Some(endpoint(&fake)),
        ..spec(&env, BackendKind::Opencode, &program, &fake, Mode::Auto, prompt)
    };
    let turn = servers.start(&env.sandbox, turn_spec("wait", None)).await.unwrap();
    assert!(fake.wait_for_requests(1, Duration::from_secs(120)).await, "OpenCode asked the model");
    let gone = fake.client_gone.notified();
    drop(turn);
    tokio::time::timeout(Duration::from_secs(30), gone).await.expect("the model request was closed");

    let mut turn = servers.start(&env.sandbox, turn_spec("again", None)).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "back again"), "{events:?}");
}

/// A model API that refuses fails the turn with OpenCode's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_api_fails_the_turn() {
    let Some(program) = common::program(BackendKind::Opencode) else { return };
    let env = env();
    let refusal = superpi_providers::testing::Reply::error(
        400,
        r#"{"error":{"message":"the fake refused","type":"invalid_request_error","code":null}}"#,
    );
    let fake = OpenAiFake::start(vec![Answer::Reply(refusal)]).await.unwrap();
    let servers = Servers::default();
    let spec = TurnSpec {
        env: Vec::new(),
        endpoint: Some(endpoint(&fake)),
        ..spec(&env, BackendKind::Opencode, &program, &fake, Mode::Auto, "hi")
    };
    let mut turn = servers.start(&env.sandbox, spec).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    let Some(BackendEvent::Failed { message }) = events.last() else { panic!("{events:?}") };
    assert!(message.contains("the fake refused"), "{message}");
}

/// A server with no turn for its idle period is stopped (its process ends); the next turn
/// starts another, which continues the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_is_stopped_and_the_next_turn_starts_another() {
    let Some(program) = common::program(BackendKind::Opencode) else { return };
    let env = env();
    let fake = OpenAiFake::start(vec![Answer::text("first"), Answer::text("second")]).await.unwrap();
    let servers = Servers::new(Duration::from_millis(300));
    let turn_spec = |prompt, resume| TurnSpec {
        resume,
        env: Vec::new(),
        endpoint: Some(endpoint(&fake)),
        ..spec(&env, BackendKind::Opencode, &program, &fake, Mode::Auto, prompt)
    };
    let mut turn = servers.start(&env.sandbox, turn_spec("one", None)).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "first"), "{events:?}");
    let id = session(&events);
    let [pid] = servers.pids()[..] else { panic!("{:?}", servers.pids()) };
    drop(turn);
    wait::until("the idle server is stopped", wait::PATIENCE, async || servers.pids().is_empty() && gone(pid)).await;

    let mut turn = servers.start(&env.sandbox, turn_spec("two", Some(id.clone()))).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert_eq!(session(&events), id, "the session goes on");
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "second"), "{events:?}");
    assert_eq!(servers.started(), 2);
    assert!(fake.accepted()[1].to_string().contains("first"), "the new server continued the session");
}

/// A turn with another model (a new configuration) in the same workspace gets a new server,
/// and the old one, idle, is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_model_replaces_the_workspaces_server() {
    let Some(program) = common::program(BackendKind::Opencode) else { return };
    let env = env();
    let fake = OpenAiFake::start(vec![Answer::text("one"), Answer::text("two")]).await.unwrap();
    let servers = Servers::default();
    let turn_spec = |model: &str| TurnSpec {
        env: Vec::new(),
        endpoint: Some(Endpoint { model: model.into(), ..endpoint(&fake) }),
        ..spec(&env, BackendKind::Opencode, &program, &fake, Mode::Auto, "hi")
    };
    let mut turn = servers.start(&env.sandbox, turn_spec("fake-model")).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "one"), "{events:?}");
    let [old] = servers.pids()[..] else { panic!("{:?}", servers.pids()) };
    drop(turn);

    let mut turn = servers.start(&env.sandbox, turn_spec("other-model")).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "two"), "{events:?}");
    let [new] = servers.pids()[..] else { panic!("{:?}", servers.pids()) };
    assert_ne!(new, old);
    assert_eq!(servers.started(), 2);
    wait::until("the replaced server's process ends", wait::PATIENCE, async || gone(old)).await;
    let models: Vec<_> = fake.accepted().iter().map(|body| body["model"].clone()).collect();
    assert_eq!(models, [json!("fake-model"), json!("other-model")]);
}

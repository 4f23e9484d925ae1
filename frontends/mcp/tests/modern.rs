//! End to end: `superpi mcp` at protocol 2026-07-28 beside the earlier revisions, driven by
//! rmcp's client in its discover lifecycle (no `initialize`; version and capabilities in every
//! request's `_meta`).
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{ClientSetup, WAIT, call, connect, connect_modern, text};
use rmcp::model::{
    CacheScope, CallToolResponse, CancelTaskParams, ElicitationAction, GetTaskParams, ProtocolVersion, TaskPayload,
    TaskStatus,
};
use serde_json::json;
use superpi_tests::TestEnv;
use superpi_tests::wait::{PATIENCE, until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_discovers_lists_with_hints_and_runs_a_task() {
    let env = TestEnv::new();
    let mut session = connect_modern(&env, ClientSetup::default()).await;
    let peer = session.client.peer();
    assert_eq!(peer.peer_info().map(|info| info.protocol_version.clone()), Some(ProtocolVersion::V_2026_07_28));

    let tools = peer.list_tools(None).await.unwrap();
    assert!(tools.tools.iter().any(|t| t.name == "harness_task"));
    assert_eq!((tools.ttl_ms, tools.cache_scope), (Some(60_000), Some(CacheScope::Private)));
    let resources = peer.list_resources(None).await.unwrap();
    assert_eq!((resources.ttl_ms, resources.cache_scope), (Some(0), Some(CacheScope::Private)));
    let templates = peer.list_resource_templates(None).await.unwrap();
    assert_eq!(templates.cache_scope, Some(CacheScope::Public));

    // harness_task: progress on the way, the answer at the end.
    let mut params = call("harness_task", json!({"prompt": "done at 2026-07-28"}));
    params.meta = Some(rmcp::model::RequestMetaObject::with_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::Number(7),
    )));
    let result = tokio::time::timeout(WAIT, session.client.call_tool(params)).await.unwrap().unwrap();
    assert!(text(&result).contains("done at 2026-07-28"), "{}", text(&result));
    // rmcp's client hands each notification to its own task, so one sent before the answer may
    // reach the handler after it: wait for it rather than expect it already there.
    let progress = tokio::time::timeout(WAIT, session.progress.recv()).await;
    assert!(matches!(progress, Ok(Some(_))), "no progress notification");
    session.client.cancel().await.expect("close");

    // An initializing client still gets a 2025 session, whose lists carry no hints.
    let session = connect(&env, ProtocolVersion::V_2025_11_25).await;
    let tools = session.client.peer().list_tools(None).await.unwrap();
    assert_eq!((tools.ttl_ms, tools.cache_scope), (None, None));
    session.client.cancel().await.expect("close");
}

/// `--approval elicit` at 2026-07-28: the question comes back as an `input_required` round
/// (rmcp's client answers it through its elicitation handler and repeats the call); a turn's
/// questions cannot wait on such a round, so `harness_task` refuses them without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_2026_a_question_is_an_input_required_round() {
    let env = TestEnv::new();
    let answers = vec![ElicitationAction::Accept, ElicitationAction::Decline];
    let setup = ClientSetup { args: vec!["--approval", "elicit"], elicitation: Some(answers), ..Default::default() };
    let mut session = connect_modern(&env, setup).await;
    let bash = |command: &str| call("bash", json!({ "command": command }));

    let result = tokio::time::timeout(WAIT, session.client.call_tool(bash("touch yes.txt && echo made"))).await;
    let result = result.unwrap().unwrap();
    assert!(result.is_error != Some(true) && text(&result).contains("made"), "{}", text(&result));
    assert!(env.workspace.join("yes.txt").exists());
    let asked = session.asked.try_recv().expect("the user was asked");
    assert!(asked.contains("touch yes.txt"), "{asked}");

    let result = tokio::time::timeout(WAIT, session.client.call_tool(bash("touch no.txt"))).await.unwrap().unwrap();
    assert!(result.is_error == Some(true) && text(&result).contains("declined"), "{}", text(&result));
    assert!(!env.workspace.join("no.txt").exists());
    assert!(session.asked.try_recv().is_ok());

    // The server keeps nothing between rounds: a call that carries no answer is asked again.
    let once = session.client.peer().call_tool_once(bash("touch again.txt")).await.unwrap();
    assert!(matches!(once, rmcp::model::CallToolResponse::InputRequired(_)), "{once:?}");
    assert!(!env.workspace.join("again.txt").exists());

    let prompt = format!("@tool bash {}", json!({ "command": "touch by-task.txt" }));
    let task = call("harness_task", json!({ "prompt": prompt }));
    tokio::time::timeout(WAIT, session.client.call_tool(task)).await.unwrap().unwrap();
    assert!(!env.workspace.join("by-task.txt").exists());
    assert!(session.asked.try_recv().is_err(), "a turn's question was put to the user");
    session.client.cancel().await.expect("close");
}

/// A client that declares the tasks extension gets `harness_task` as a task: the handle at
/// once, `tasks/get` working with the latest step, then the result; `tasks/cancel` cancels the
/// turn. A client without the extension still gets the whole turn as the call's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_2026_harness_task_is_a_task_for_a_client_that_declares_tasks() {
    let env = TestEnv::new();
    let session = connect_modern(&env, ClientSetup { tasks: true, ..Default::default() }).await;
    let peer = session.client.peer().clone();
    let started = |prompt: &str| {
        let (peer, params) = (peer.clone(), call("harness_task", json!({ "prompt": prompt })));
        async move {
            match peer.call_tool_once(params).await.unwrap() {
                CallToolResponse::Task(created) => created.task,
                other => panic!("no task: {other:?}"),
            }
        }
    };
    let state = |id: String| {
        let peer = peer.clone();
        async move { peer.get_task(GetTaskParams::new(id)).await.unwrap().task }
    };

    // Asked before the turn ends (the mock model holds the step), it is working.
    let held = started("@tool bash {\"command\": \"echo one && sleep 30\"}").await;
    assert_eq!(held.status, TaskStatus::Working);
    assert!(held.poll_interval_ms.is_some());
    let id = held.task_id.clone();
    until("the task's status names the running tool", PATIENCE, async || {
        state(id.clone()).await.task.status_message.is_some_and(|m| m.contains("running bash"))
    })
    .await;
    assert_eq!(state(id.clone()).await.status(), TaskStatus::Working);
    peer.cancel_task(CancelTaskParams::new(id.clone())).await.unwrap();
    until("the task is cancelled", PATIENCE, async || state(id.clone()).await.status() == TaskStatus::Cancelled).await;

    let task = started("done as a task").await;
    let id = task.task_id;
    until("the task ends", PATIENCE, async || state(id.clone()).await.status().is_terminal()).await;
    let TaskPayload::Completed { result } = state(id).await.payload else { panic!("not completed") };
    assert_eq!(result["structuredContent"]["result"], "done as a task", "{result:?}");
    assert_eq!(result["isError"], false, "{result:?}");

    // With an outputSchema the task's result has the checked answer parsed, as a call's has.
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let params = call("harness_task", json!({"prompt": "@answer {\"n\": 9}", "outputSchema": schema}));
    let CallToolResponse::Task(created) = peer.call_tool_once(params).await.unwrap() else { panic!("no task") };
    let id = created.task.task_id;
    until("the structured task ends", PATIENCE, async || state(id.clone()).await.status().is_terminal()).await;
    let TaskPayload::Completed { result } = state(id).await.payload else { panic!("not completed") };
    assert_eq!(result["structuredContent"]["structured_output"], json!({"n": 9}), "{result:?}");

    // Another client's poll of a made-up task is refused.
    let forged = peer.get_task(GetTaskParams::new("superpi.999999.1.0.0.superpi-code")).await;
    assert!(forged.is_err(), "{forged:?}");
    session.client.cancel().await.expect("close");

    let plain = connect_modern(&env, ClientSetup::default()).await;
    let whole = tokio::time::timeout(WAIT, plain.client.call_tool(call("harness_task", json!({"prompt": "whole"}))));
    assert!(text(&whole.await.unwrap().unwrap()).contains("whole"));
    plain.client.cancel().await.expect("close");
}

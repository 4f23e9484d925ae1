//! End to end at protocol 2026-07-28: `subscriptions/listen` (the resource list's and a
//! transcript's changes on the listen stream) and the tasks extension's `tasks/update` (a
//! task's questions answered by the person through the client), driven by rmcp's client over
//! the real `superpi mcp` and kernel.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{ClientSetup, WAIT, call, connect_modern};
use rmcp::model::{
    CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult, InputRequest, InputResponses, ServerNotification,
    SubscriptionFilter, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{Peer, RoleClient, Subscription};
use serde_json::{Value, json};
use superpi_tests::TestEnv;
use superpi_tests::wait::{PATIENCE, until};

async fn start(peer: &Peer<RoleClient>, prompt: &str) -> String {
    match peer.call_tool_once(call("harness_task", json!({ "prompt": prompt }))).await.unwrap() {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("no task: {other:?}"),
    }
}

async fn state(peer: &Peer<RoleClient>, id: &str) -> GetTaskResult {
    peer.get_task(GetTaskParams::new(id.to_string())).await.unwrap()
}

/// Polls until the task asks something; the questions' keys and form messages and fields.
async fn questions(peer: &Peer<RoleClient>, id: &str) -> Vec<(String, String, Value)> {
    until("the task asks", PATIENCE, async || state(peer, id).await.task.status() == TaskStatus::InputRequired).await;
    let TaskPayload::InputRequired { input_requests } = state(peer, id).await.task.payload else { panic!("no input") };
    input_requests
        .into_iter()
        .map(|(key, request)| {
            let InputRequest::Elicitation(elicit) = request else { panic!("not an elicitation: {request:?}") };
            let params = serde_json::to_value(&elicit.params).unwrap();
            (key, params["message"].as_str().unwrap().to_string(), params["requestedSchema"]["properties"].clone())
        })
        .collect()
}

async fn answer(peer: &Peer<RoleClient>, id: &str, key: &str, response: Value) {
    let responses = InputResponses::from([(key.to_string(), response)]);
    peer.update_task(UpdateTaskParams::new(id, responses)).await.unwrap();
}

async fn result(peer: &Peer<RoleClient>, id: &str) -> Value {
    until("the task ends", PATIENCE, async || state(peer, id).await.task.status().is_terminal()).await;
    let TaskPayload::Completed { result } = state(peer, id).await.task.payload else { panic!("not completed") };
    result["structuredContent"]["result"].clone()
}

/// With `--approval elicit` a task's permission question is `input_required` in `tasks/get`;
/// `tasks/update` accepting it runs the call, declining refuses it. The model's question is a
/// form whose answer the model gets. A key that names no open question is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_2026_tasks_update_answers_a_tasks_questions() {
    let env = TestEnv::new();
    let setup = ClientSetup { args: vec!["--approval", "elicit"], elicitation: Some(vec![]), tasks: true };
    let mut session = connect_modern(&env, setup).await;
    let peer = session.client.peer().clone();
    let touch = |file: &str| format!("@tool bash {}", json!({ "command": format!("touch {file} && echo made") }));

    let id = start(&peer, &touch("yes.txt")).await;
    let asked = questions(&peer, &id).await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].1.contains("touch yes.txt"), "{asked:?}");
    answer(&peer, &id, "no-such-question", json!({"action": "decline"})).await;
    answer(&peer, &id, &asked[0].0, json!({"action": "accept", "content": {}})).await;
    let done = result(&peer, &id).await;
    assert!(done.as_str().unwrap().contains("made"), "{done}");
    assert!(env.workspace.join("yes.txt").exists());

    let id = start(&peer, &touch("no.txt")).await;
    let asked = questions(&peer, &id).await;
    answer(&peer, &id, &asked[0].0, json!({"action": "decline"})).await;
    result(&peer, &id).await;
    assert!(!env.workspace.join("no.txt").exists());

    let ask = json!({"questions": [{"id": "db", "question": "Which database?", "options": ["sqlite", "postgres"]}]});
    let id = start(&peer, &format!("@tool ask_question {ask}")).await;
    let asked = questions(&peer, &id).await;
    assert_eq!(asked[0].1, "Which database?");
    assert_eq!(asked[0].2["db"]["enum"], json!(["sqlite", "postgres"]), "{asked:?}");
    answer(&peer, &id, &asked[0].0, json!({"action": "accept", "content": {"db": "postgres"}})).await;
    let done = result(&peer, &id).await;
    assert!(done.as_str().unwrap().contains(r#"ask_question returned: {"db":"postgres"}"#), "{done}");
    // The questions went through the task, never as an elicitation request.
    assert!(session.asked.try_recv().is_err());
    session.client.cancel().await.expect("close");
}

async fn next(sub: &mut Subscription) -> ServerNotification {
    tokio::time::timeout(WAIT, sub.next()).await.expect("a notification in time").unwrap().expect("the stream is open")
}

/// The listen stream: the accepted filter (the resource list and transcripts, not the tool or
/// prompt lists, which do not change), the list's change when a task starts a conversation, and
/// the transcript's change when its turn ends. `initialize` (2025) offers neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_2026_listen_streams_the_resource_list_and_a_transcript() {
    let env = TestEnv::new();
    let session = connect_modern(&env, ClientSetup { tasks: true, ..Default::default() }).await;
    let peer = session.client.peer().clone();
    let resources = peer.peer_info().and_then(|info| info.capabilities.resources.clone()).unwrap();
    assert_eq!((resources.subscribe, resources.list_changed), (Some(true), Some(true)));
    let filter = SubscriptionFilter::builder().tools_list_changed().resources_list_changed().build();
    let mut lists = tokio::time::timeout(WAIT, peer.listen(filter)).await.unwrap().unwrap();
    assert_eq!(lists.acknowledged().tools_list_changed, None);
    assert_eq!(lists.acknowledged().resources_list_changed, Some(true));

    let id = start(&peer, "@tool bash {\"command\": \"echo one && sleep 30\"}").await;
    assert!(matches!(next(&mut lists).await, ServerNotification::ResourceListChangedNotification(_)));
    let conversation = id.split('.').nth(1).unwrap();
    let uri = format!("superpi://conversation/{conversation}/transcript");
    let listed = peer.list_resources(None).await.unwrap();
    assert!(listed.resources.iter().any(|r| r.uri == uri), "{listed:?}");

    let filter = SubscriptionFilter::builder().resource_subscription(uri.clone()).build();
    let mut transcript = tokio::time::timeout(WAIT, peer.listen(filter)).await.unwrap().unwrap();
    assert_eq!(transcript.acknowledged().resource_subscriptions, Some(vec![uri.clone()]));
    peer.cancel_task(CancelTaskParams::new(id.clone())).await.unwrap();
    let ServerNotification::ResourceUpdatedNotification(updated) = next(&mut transcript).await else {
        panic!("no update")
    };
    assert_eq!(updated.params.uri, uri);
    until("the task is cancelled", PATIENCE, async || state(&peer, &id).await.task.status() == TaskStatus::Cancelled)
        .await;
    transcript.cancel().await.unwrap();
    lists.cancel().await.unwrap();
    session.client.cancel().await.expect("close");

    // The 2025 revisions' `resources/subscribe` is not served, so `initialize` offers neither.
    let legacy = common::connect(&env, rmcp::model::ProtocolVersion::V_2025_11_25).await;
    let resources = legacy.client.peer().peer_info().and_then(|info| info.capabilities.resources.clone());
    assert_eq!(resources.map(|r| (r.subscribe, r.list_changed)), Some((None, None)));
    legacy.client.cancel().await.expect("close");
}

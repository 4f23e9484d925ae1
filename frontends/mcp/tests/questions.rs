//! End to end: the model's questions (`ask_question`) during a `harness_task`, through the
//! real `superpi mcp` and kernel: a form elicitation to a client that declared elicitation,
//! whose answer is the call's result; a client without it is not asked, and the model reads
//! why.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{ClientSetup, call_tool, connect_with, text};
use rmcp::model::{ElicitationAction, ProtocolVersion};
use serde_json::json;
use superpi_tests::TestEnv;

const VERSION: ProtocolVersion = ProtocolVersion::V_2025_06_18;

fn ask() -> serde_json::Value {
    let questions =
        json!({"questions": [{"id": "db", "question": "Which database?", "options": ["sqlite", "postgres"]}]});
    json!({ "prompt": format!("@tool ask_question {questions}") })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harness_tasks_question_is_elicited_from_a_client_that_can_answer() {
    let env = TestEnv::new();
    let setup = ClientSetup {
        args: vec!["--approval", "elicit"],
        elicitation: Some(vec![ElicitationAction::Accept]),
        ..Default::default()
    };
    let mut session = connect_with(&env, VERSION, setup).await;
    let answer = text(&call_tool(&session, "harness_task", ask()).await.unwrap());
    assert!(answer.contains(r#"ask_question returned: {"db":"postgres"}"#), "{answer}");
    assert_eq!(session.asked.try_recv().expect("the user was asked"), "Which database?");
    session.client.cancel().await.expect("close");

    // A client that declared no elicitation is not asked; the model is told why.
    let session = connect_with(&env, VERSION, ClientSetup::default()).await;
    let answer = text(&call_tool(&session, "harness_task", ask()).await.unwrap());
    assert!(answer.contains("did not declare elicitation"), "{answer}");
    session.client.cancel().await.expect("close");
}

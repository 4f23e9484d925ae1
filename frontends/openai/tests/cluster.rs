//! The gateway on two machines (two data directories) whose kernels share one PostgreSQL
//! database, as a team puts it behind a load balancer: a session started through one machine's
//! gateway continues through the other's, while both live and after the first is killed.
//! Skipped, saying so, without PostgreSQL binaries unless CI is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Gateway, chat_body, http, read_stream};
use serde_json::Value;
use superpi_tests::{TestEnv, postgres_server};

async fn post(gw: &Gateway, body: &Value, session: &str) -> reqwest::Response {
    let req = http().post(gw.url("/v1/chat/completions")).header("x-session-id", session).body(body.to_string());
    tokio::time::timeout(Duration::from_secs(60), req.send()).await.expect("answer in time").unwrap()
}

fn conversation_of(resp: &reqwest::Response) -> i64 {
    resp.headers()["x-superpi-conversation-id"].to_str().unwrap().parse().unwrap()
}

/// One answer's conversation and text (JSON).
async fn answer(gw: &Gateway, session: &str, prompt: &str) -> (i64, String) {
    let resp = post(gw, &chat_body("superpi-code", false, prompt), session).await;
    assert_eq!(resp.status(), 200);
    let conversation = conversation_of(&resp);
    let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    (conversation, body["choices"][0]["message"]["content"].as_str().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_started_through_one_machines_gateway_continues_through_anothers() {
    let Some(server) = postgres_server::shared() else { return };
    let url = server.new_database();
    let vars = [("SUPERPI_DATABASE_URL", url.as_str()), ("SUPERPI_LEASE_MS", "1500")];
    let [(machine_a, _kernel_a, _), (machine_b, _kernel_b, _)] = TestEnv::two_on_one_database(&url).await;
    let gateway_a = Gateway::start_in(machine_a, &[], &vars);
    let gateway_b = Gateway::start_in(machine_b, &[], &vars);

    let (conversation, text) = answer(&gateway_a, "team", "one").await;
    assert_eq!(text, "one");
    // Through B while A runs the conversation: the same session, run by A, answered by B.
    let (same, text) = answer(&gateway_b, "team", "two").await;
    assert_eq!((same, text.as_str()), (conversation, "two"));
    let streamed = post(&gateway_b, &chat_body("superpi-code", true, "three"), "team").await;
    assert_eq!(conversation_of(&streamed), conversation);
    let streamed = read_stream(&streamed.text().await.unwrap());
    assert!(streamed.done && streamed.error.is_none(), "{streamed:?}");
    assert_eq!(streamed.content, "three");

    // A's machine dies: B takes the conversation over once A's lease runs out, and the
    // session goes on with its history.
    gateway_a.env.kill_kernel();
    drop(gateway_a);
    let (same, text) = answer(&gateway_b, "team", "four").await;
    assert_eq!((same, text.as_str()), (conversation, "four"));
    let client = gateway_b.env.wait_for_kernel().await;
    assert!(client.status().await.unwrap().owned_conversations.contains(&conversation));
    let prompts: Vec<String> = client
        .history(conversation)
        .await
        .unwrap()
        .entries
        .iter()
        .filter(|e| e.kind.as_str() == "user")
        .map(|e| e.message.text())
        .collect();
    assert_eq!(prompts, ["one", "two", "three", "four"]);
}

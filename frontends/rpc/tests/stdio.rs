//! End to end through stdio: `superpi rpc --stdio` as an IDE starts it, a raw line client on
//! its pipes. Every line on stdout must be a JSON-RPC message (the client parses each one).
//! An external MCP server of the user's settings serves a turn started over RPC.
//!
//! Build the binary first: `cargo build -p superpi-cli && cargo test -p superpi-rpc`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use common::*;
use serde_json::{Value, json};
use superpi_tests::TestEnv;

#[tokio::test]
async fn a_session_over_stdio() {
    let env = TestEnv::new();
    let (mut child, mut c) = stdio(&env, &[]);
    let id = open(&mut c).await;
    let w = watch(&mut c, id, false).await;
    c.ok("session.submit", json!({"conversation_id": id, "content": [{"type": "text", "text": "hello from stdio"}]}))
        .await;
    let events = c.events_until(w, is_type("turn_completed")).await;
    assert_eq!(events.last().unwrap()["result"], json!("hello from stdio"));

    // Errors travel the same way, and the server keeps going.
    let r = c.raw("this is not json").await;
    assert_eq!(r["error"]["code"], json!(-32700));
    let r = c.raw(r#"{"jsonrpc":"2.0","id":"x","method":"session.nope"}"#).await;
    assert_eq!(r["error"]["code"], json!(-32601));
    let r = c.raw(r#"{"jsonrpc":"2.0","id":"y","method":"session.watch","params":{"conversation_id":"one"}}"#).await;
    assert_eq!(r["error"]["code"], json!(-32602));

    // When stdin closes, requests in flight are answered, then the server exits 0.
    c.send_raw(br#"{"jsonrpc":"2.0","id":"last","method":"session.list"}"#).await;
    c.close().await;
    let mut answered = false;
    while let Some(v) = c.read_line().await {
        if v["id"] == json!("last") {
            answered = true;
        }
    }
    assert!(answered, "the last request was answered before exit");
    let status = tokio::time::timeout(READ_TIMEOUT, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn stdio_with_tokens_needs_a_login() {
    let env = TestEnv::new();
    let (mut child, mut c) = stdio(&env, &[("SUPERPI_TOKENS", "tok")]);
    assert_eq!(c.err("harness.list", json!({})).await["code"], json!(-32001));
    // A login sent without waiting is finished before the next line is read.
    c.send_raw(br#"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"token":"tok"}}"#).await;
    c.send_raw(br#"{"jsonrpc":"2.0","id":2,"method":"harness.list"}"#).await;
    let first: Value = c.read_line().await.unwrap();
    let second: Value = c.read_line().await.unwrap();
    assert_eq!(first["id"], json!(1));
    assert_eq!(first["result"]["auth"], json!(true));
    assert_eq!(second["id"], json!(2));
    assert!(second["result"]["harnesses"].is_array(), "{second}");
    c.close().await;
    let status = tokio::time::timeout(READ_TIMEOUT, child.wait()).await.unwrap().unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn pipelined_calls_run_in_order() {
    let env = TestEnv::new();
    let (mut child, mut c) = stdio(&env, &[]);
    // Open, watch and submit without waiting: each line is done before the next is read.
    c.send_raw(br#"{"jsonrpc":"2.0","id":1,"method":"session.open","params":{}}"#).await;
    c.send_raw(br#"{"jsonrpc":"2.0","id":2,"method":"session.watch","params":{"conversation_id":1}}"#).await;
    c.send_raw(
        br#"{"jsonrpc":"2.0","id":3,"method":"session.submit","params":{"conversation_id":1,"prompt":"piped"}}"#,
    )
    .await;
    let mut answers = Vec::new();
    while answers.len() < 3 {
        let v = c.read_line().await.unwrap();
        if !is_notification(&v) {
            answers.push(v);
        }
    }
    let ids: Vec<Value> = answers.iter().map(|a| a["id"].clone()).collect();
    assert_eq!(ids, vec![json!(1), json!(2), json!(3)]);
    assert!(answers.iter().all(|a| a.get("result").is_some()), "{answers:?}");
    c.close().await;
    while c.read_line().await.is_some() {}
    assert!(tokio::time::timeout(READ_TIMEOUT, child.wait()).await.unwrap().unwrap().success());
}

/// Every kind of malformed line, each followed by a request on the same connection: each gets
/// its JSON-RPC error (or none) and the request still succeeds.
#[test]
fn every_kind_of_malformed_line_is_answered_and_serving_goes_on() {
    use superpi_tests::bad_input::{json_rpc_lines, run_stdio_battery};
    run_stdio_battery(
        &TestEnv::new(),
        &["rpc", "--stdio"],
        &[],
        &json_rpc_lines(superpi_rpc::DEFAULT_MAX_LINE, "session.watch", json!({"conversation_id": "one"})),
        |id| json!({"jsonrpc": "2.0", "id": id, "method": "harness.list"}),
        |answer| assert!(answer["result"]["harnesses"].is_array(), "{answer}"),
    );
}

#[tokio::test]
async fn an_external_mcp_servers_tool_round_trips_through_a_turn() {
    let env = TestEnv::new();
    let fixture = superpi_tests::mcp_fixture_bin();
    let settings = json!({ "mcp_servers": { "fix": { "command": fixture } } });
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    let (mut child, mut c) = stdio(&env, &[]);
    let id = open(&mut c).await;
    let w = watch(&mut c, id, false).await;
    let prompt = r#"@tool mcp__fix__echo {"text":"over rpc"}"#;
    c.ok("session.submit", json!({"conversation_id": id, "content": [{"type": "text", "text": prompt}]})).await;
    let events = c.events_until(w, turn_end).await;
    assert_eq!(events.last().unwrap()["type"], json!("turn_completed"), "{events:?}");
    let result = events.iter().find(|e| e["type"] == "tool_completed").expect("a completed tool call");
    assert_eq!(result["is_error"], json!(false), "{result}");
    assert!(result.to_string().contains("echo: over rpc"), "{result}");
    c.close().await;
    let status = tokio::time::timeout(READ_TIMEOUT, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
}

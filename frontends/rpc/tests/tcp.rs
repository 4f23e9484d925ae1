//! End to end over loopback TCP, and what happens when the kernel goes away.
//!
//! Build the binary first: `cargo build -p superpi-cli && cargo test -p superpi-rpc`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use common::*;
use serde_json::json;
use superpi_tests::TestEnv;

#[tokio::test]
async fn tcp_serves_on_loopback_only() {
    let env = TestEnv::new();
    let (_child, address) = spawn_listening(&env, &["rpc", "--port", "0"], &[]).await;
    let addr = address.strip_prefix("tcp:").expect("a tcp address");
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (read, write) = stream.into_split();
    let mut c = LineClient::new(read, write);
    let id = open(&mut c).await;
    let w = watch(&mut c, id, false).await;
    c.ok("session.submit", json!({"conversation_id": id, "prompt": "over tcp"})).await;
    let events = c.events_until(w, turn_end).await;
    assert_eq!(events.last().unwrap()["result"], json!("over tcp"));
}

#[tokio::test]
async fn losing_the_kernel_ends_the_watch_and_the_connection() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let id = open(&mut c).await;
    let w = watch(&mut c, id, false).await;
    env.kill_kernel();
    let mut ended = false;
    while let Some(line) = c.read_line().await {
        if line["method"] == "session.watch_ended" {
            assert_eq!(line["params"]["watch"], json!(w));
            ended = true;
        }
    }
    assert!(ended, "the watch's end was announced before the connection closed");
    // The server itself goes on: a new connection autostarts a new kernel.
    let mut again = server.client().await;
    let listed = again.ok("session.list", json!({})).await;
    assert_eq!(listed["conversations"][0]["conversation_id"], json!(id), "the store kept the conversation");
}

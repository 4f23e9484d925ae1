//! Provider-path latency: prints figures, asserts nothing.
//!
//! `cargo build --release -p superpi-cli && cargo run --release -p superpi-tests --bin provider_latency`
//!
//! A local OpenAI-compatible server writes one stream chunk at a time and waits until a client
//! watching the conversation has the matching `text_delta`: the time between the chunk reaching
//! the socket and its event leaving the kernel (and being read by a frontend) is what the
//! provider layer, the kernel and one socket hop add.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_tests::TestEnv;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const CHUNKS: usize = 300;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(bench());
}

async fn bench() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // SAFETY: set before the kernel (a child) starts; no other thread reads the environment.
    unsafe {
        std::env::set_var("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"));
        std::env::set_var("OPENAI_API_KEY", "sk-bench");
    }
    let env = TestEnv::new();
    let (arrived_tx, mut arrived_rx) = mpsc::unbounded_channel::<Instant>();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            head.extend_from_slice(&buf[..n]);
            if let Some(at) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                let text = String::from_utf8_lossy(&head[..at]).to_lowercase();
                let len: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
                    .unwrap_or(0);
                while head.len() < at + 4 + len {
                    let n = socket.read(&mut buf).await.unwrap();
                    head.extend_from_slice(&buf[..n]);
                }
                break;
            }
        }
        socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut latencies = Vec::with_capacity(CHUNKS);
        for i in 0..CHUNKS {
            let role = if i == 0 { "\"role\":\"assistant\"," } else { "" };
            let chunk = format!(
                "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{{role}\"content\":\"t{i} \"}}}}]}}\n\n"
            );
            socket.write_all(chunk.as_bytes()).await.unwrap();
            socket.flush().await.unwrap();
            let sent = Instant::now();
            let arrived = arrived_rx.recv().await.unwrap();
            latencies.push(arrived.saturating_duration_since(sent));
        }
        socket
            .write_all(b"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
            .await
            .unwrap();
        latencies
    });

    let client = KernelClient::connect(&env.connect_options("bench")).await.unwrap();
    let conv = client
        .open(OpenParams {
            workspace: Some(env.workspace.display().to_string()),
            model: Some("gpt-4o-mini".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .conversation_id;
    let mut sub = client.watch(WatchParams::live(conv)).await.unwrap();
    let turn = client.submit_text(conv, "hi").await.unwrap();
    loop {
        let ev =
            tokio::time::timeout(Duration::from_secs(30), sub.next()).await.expect("event in time").expect("event");
        match ev.body {
            EventBody::TextDelta { .. } => arrived_tx.send(Instant::now()).unwrap(),
            _ if ev.turn_id == Some(turn.turn_id) && ev.body.is_turn_end() => break,
            _ => {}
        }
    }
    let mut latencies = server.await.unwrap();
    latencies.sort();
    let pick = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e6;
    println!("provider path latency (OpenAI-compatible stream on 127.0.0.1, {CHUNKS} chunks, one at a time)");
    println!(
        "  chunk on the socket → text_delta read by a watching frontend: p50 {:.0} µs, p99 {:.0} µs",
        pick(0.5),
        pick(0.99)
    );
}

//! Kernel benchmark: prints figures, asserts nothing.
//!
//! `cargo build --release -p superpi-cli && cargo run --release -p superpi-tests --bin kernel_bench`
//!
//! - events per second from the kernel to one watching client for 1,000,000 `text_delta`s
//!   (the mock's `@deltas 1000000`), with acks, counted at the client after parsing;
//! - p50 and p99 round trip of a trivial request (`kernel.status`) over the socket.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_tests::TestEnv;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let deltas: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    // SAFETY: no other thread exists yet.
    unsafe {
        std::env::set_var("SUPERPI_EVENT_BUFFER", (deltas + 1024).to_string());
        // A delta's wire form is about 150 bytes: room for the whole burst.
        std::env::set_var("SUPERPI_EVENT_BUFFER_BYTES", ((deltas + 1024) * 256).to_string());
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(bench(deltas));
}

async fn bench(deltas: u64) {
    let env = TestEnv::new();
    let client = KernelClient::connect(&env.connect_options("bench")).await.expect("kernel");
    let conv = client
        .open(OpenParams { workspace: Some(env.workspace.display().to_string()), ..Default::default() })
        .await
        .unwrap()
        .conversation_id;

    // Round trips first, on an idle kernel.
    let mut rtts = Vec::with_capacity(10_000);
    for _ in 0..10_000 {
        let t = Instant::now();
        client.status().await.unwrap();
        rtts.push(t.elapsed());
    }
    rtts.sort();

    // The whole tool path: kernel, policy, confined process, result (`tool.call` of `true`).
    let ws = env.workspace.display().to_string();
    let mut tool_calls = Vec::with_capacity(200);
    for _ in 0..200 {
        let t = Instant::now();
        let r = client
            .call(
                "tool.call",
                serde_json::json!({"name": "bash", "arguments": {"command": "true"}, "workspace": ws, "mode": "auto"}),
            )
            .await
            .unwrap();
        tool_calls.push(t.elapsed());
        assert_eq!(r["is_error"], false, "{r}");
    }
    tool_calls.sort();

    let mut sub = client.watch(WatchParams::live(conv).window(4096)).await.unwrap();
    let start = Instant::now();
    let turn = client.submit_text(conv, &format!("@deltas {deltas}")).await.unwrap();
    let mut received = 0u64;
    let mut first: Option<Duration> = None;
    loop {
        let ev = sub.next().await.expect("event");
        match ev.body {
            EventBody::TextDelta { .. } => {
                received += 1;
                first.get_or_insert_with(|| start.elapsed());
            }
            _ if ev.turn_id == Some(turn.turn_id) && ev.body.is_turn_end() => break,
            _ => {}
        }
    }
    let elapsed = start.elapsed();

    println!("kernel benchmark (release build, 2-core machine)");
    println!(
        "  text_delta events to one watcher: {received} of {deltas} in {:.2} s = {:.0} events/s (first after {:.2} ms)",
        elapsed.as_secs_f64(),
        received as f64 / elapsed.as_secs_f64(),
        first.unwrap_or_default().as_secs_f64() * 1e3
    );
    println!(
        "  kernel.status round trip over the socket: p50 {:.1} µs, p99 {:.1} µs ({} requests)",
        percentile(&rtts, 0.5).as_secs_f64() * 1e6,
        percentile(&rtts, 0.99).as_secs_f64() * 1e6,
        rtts.len()
    );
    println!(
        "  bash `true` through the whole path (socket, kernel, policy, confined process, result): median {:.2} ms, p99 {:.2} ms",
        percentile(&tool_calls, 0.5).as_secs_f64() * 1e3,
        percentile(&tool_calls, 0.99).as_secs_f64() * 1e3
    );
    if received < deltas {
        println!(
            "  note: {} deltas were skipped because the watcher lagged and caught up from the store",
            deltas - received
        );
    }
}

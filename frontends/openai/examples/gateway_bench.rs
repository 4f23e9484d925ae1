//! Gateway benchmark: prints figures, asserts nothing.
//!
//! `cargo build -p superpi-cli && cargo run -p superpi-openai --example gateway_bench`
//! (add `--release` to both for release figures; SUPERPI_BIN overrides the binary).
//!
//! 1. One streamed mock answer (`@deltas N`): time to first byte, to first content, and
//!    content chunks per second.
//! 2. 200 concurrent streamed requests: how many completed, p50/p99 time to first byte,
//!    errors, wall time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{Gateway, chat_body, http};
use superpi_tests::bench::{SseTimer, StreamTiming, concurrent, percentile, time_response};

const DELTAS: usize = 10_000;
const CONCURRENT: usize = 200;

/// One streamed completion, timed until `[DONE]` (finished) or the end of the body.
async fn stream(
    client: &reqwest::Client,
    url: &str,
    prompt: &str,
    session: Option<String>,
) -> Result<StreamTiming, String> {
    let start = Instant::now();
    let mut req = client.post(url).body(chat_body("superpi-code", true, prompt).to_string());
    if let Some(id) = session {
        req = req.header("x-session-id", id);
    }
    let resp = req.send().await.map_err(|e| e.to_string())?;
    let timer = SseTimer::new(
        start,
        |event| event.contains("\"content\":\"") && !event.contains("\"content\":\"\""),
        |event| event.starts_with("data: [DONE]").then_some(true),
    );
    time_response(resp, timer).await
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    superpi_tests::bench::run(bench());
}

async fn bench() {
    let gw = Gateway::start(&[], &[]);
    let client = http();
    let url = gw.url("/v1/chat/completions");

    // Warm up: the first request starts the kernel.
    let warm = stream(&client, &url, "warm up", None).await.unwrap();
    println!("warm-up (kernel autostart included): {}", ms(warm.total));

    let run = stream(&client, &url, &format!("@deltas {DELTAS}"), None).await.unwrap();
    let streaming = run.total - run.first_content.unwrap_or_default();
    println!("one streamed mock answer, @deltas {DELTAS}:");
    println!("  time to first byte        {}", ms(run.ttfb));
    println!("  time to first content     {}", run.first_content.map(ms).unwrap_or_else(|| "-".into()));
    println!("  total                     {}", ms(run.total));
    println!("  SSE events                {} ({} with content)", run.events, run.content_events);
    println!(
        "  content chunks/s          {:.0}",
        run.content_events as f64 / streaming.as_secs_f64().max(f64::EPSILON)
    );
    println!("  ended with [DONE]         {}", run.finished);

    let mut all = concurrent(CONCURRENT, |i| {
        let (client, url) = (client.clone(), url.clone());
        async move { stream(&client, &url, "@deltas 50\nconcurrent", Some(format!("bench-{i}"))).await }
    })
    .await;
    let cut = all.ttfbs.len() - all.finished;
    all.errors.extend((0..cut).map(|_| "stream ended without [DONE]".to_string()));
    println!("{CONCURRENT} concurrent streamed requests (@deltas 50, one session each):");
    println!("  completed                 {}/{CONCURRENT}", all.finished);
    println!("  errors                    {}", all.errors.len());
    for e in all.errors.iter().take(5) {
        println!("    {e}");
    }
    println!("  time to first byte p50    {}", ms(percentile(&all.ttfbs, 0.50)));
    println!("  time to first byte p99    {}", ms(percentile(&all.ttfbs, 0.99)));
    println!("  wall time                 {}", ms(all.wall));
}

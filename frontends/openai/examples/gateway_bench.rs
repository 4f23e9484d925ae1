//! Gateway benchmark: prints figures, asserts nothing.
//!
//! `cargo build -p superpi-cli && cargo run -p superpi-openai --example gateway_bench`
//! (add `--release` to both for release figures; SUPERPI_BIN overrides the binary).
//!
//! Through superpi-tests' `bench::streamed_answers`: one streamed mock answer (`@deltas N`):
//! time to first byte, to first content, and content chunks per second; then 200 concurrent
//! streamed requests, one session each: how many completed, p50/p99 time to first byte,
//! errors, wall time. Then 2,000 plain completions without a session id, 16 at a time (each a
//! one-shot conversation of its own): wall time and p50/p99 latency. BENCH_ONESHOT_ONLY=1 runs
//! only that part.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::{Gateway, chat_body, http};
use superpi_tests::bench::{SseTimer, StreamTiming, StreamedAnswers, streamed_answers, time_response};

/// One streamed completion in session `session`, timed until `[DONE]` (finished) or the end
/// of the body.
async fn stream(client: reqwest::Client, url: String, session: String, prompt: String) -> Result<StreamTiming, String> {
    let start = Instant::now();
    let req =
        client.post(url).header("x-session-id", session).body(chat_body("superpi-code", true, &prompt).to_string());
    let resp = req.send().await.map_err(|e| e.to_string())?;
    let timer = SseTimer::new(
        start,
        |event| event.contains("\"content\":\"") && !event.contains("\"content\":\"\""),
        |event| event.starts_with("data: [DONE]").then_some(true),
    );
    time_response(resp, timer).await
}

fn main() {
    superpi_tests::bench::run(async {
        let gateway = Gateway::start(&[], &[]);
        let (client, url) = (http(), gateway.url("/v1/chat/completions"));
        if std::env::var_os("BENCH_ONESHOT_ONLY").is_none() {
            let plan = StreamedAnswers { deltas: 10_000, concurrent: 200, concurrent_deltas: 50, end: "[DONE]" };
            streamed_answers(plan, |session, prompt| stream(client.clone(), url.clone(), session, prompt)).await;
        }
        one_shots(&client, &url, 2_000, 16).await;
    });
}

/// `total` completions without a session id, `at_once` in flight: each is a conversation of
/// its own, created, answered and left.
async fn one_shots(client: &reqwest::Client, url: &str, total: usize, at_once: usize) {
    use futures::StreamExt;
    let start = Instant::now();
    let one = |i: usize| {
        let req = client.post(url).body(chat_body("superpi-code", false, &format!("one-shot {i}")).to_string());
        async move {
            let t = Instant::now();
            let ok = match req.send().await {
                Ok(resp) => resp.status().is_success() && resp.bytes().await.is_ok(),
                Err(_) => false,
            };
            (t.elapsed(), ok)
        }
    };
    let results: Vec<_> = futures::stream::iter(0..total).map(one).buffer_unordered(at_once).collect().await;
    let wall = start.elapsed();
    let errors = results.iter().filter(|(_, ok)| !ok).count();
    let mut times: Vec<_> = results.into_iter().map(|(t, _)| t).collect();
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!(
        "{total} completions without a session id, {at_once} at a time: {:.2} s, p50 {:.1} ms, p99 {:.1} ms, {errors} errors",
        wall.as_secs_f64(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3
    );
}

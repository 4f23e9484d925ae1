//! AG-UI benchmark: prints figures, asserts nothing.
//!
//! `cargo build -p superpi-cli && cargo run -p superpi-agui --example agui_bench`
//! (add `--release` to both for release figures; SUPERPI_BIN overrides the binary).
//!
//! 1. One streamed mock answer (`@deltas N`): time to first byte, to the first
//!    TEXT_MESSAGE_CONTENT, to RUN_FINISHED, and how many content events carried it.
//! 2. 200 concurrent runs on 200 threads: how many finished, p50/p99 time to first byte and to
//!    RUN_FINISHED, errors, wall time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::{Server, http, run_input};
use superpi_tests::bench::{SseTimer, StreamTiming, concurrent, percentile, time_response};

const DELTAS: usize = 10_000;
const CONCURRENT: usize = 200;

/// One run on `thread`, timed until RUN_FINISHED (finished), RUN_ERROR or a cut stream.
async fn stream(client: &reqwest::Client, url: &str, thread: &str, prompt: &str) -> Result<StreamTiming, String> {
    let start = Instant::now();
    let body = run_input(thread, "bench", prompt);
    let resp = client.post(url).json(&body).send().await.map_err(|e| e.to_string())?;
    let timer = SseTimer::new(
        start,
        |event| event.contains("\"type\":\"TEXT_MESSAGE_CONTENT\""),
        |event| {
            let finished = event.contains("\"type\":\"RUN_FINISHED\"");
            (finished || event.contains("\"type\":\"RUN_ERROR\"")).then_some(finished)
        },
    );
    time_response(resp, timer).await
}

fn main() {
    superpi_tests::bench::run(bench());
}

async fn bench() {
    let server = Server::start(&[], &[]);
    let client = http();
    let url = server.url("/agui/v1/run");
    // Warm up: the first request starts the kernel.
    stream(&client, &url, "warm", "hi").await.unwrap();

    let prompt = format!("@deltas {DELTAS}");
    let run = stream(&client, &url, "one", &prompt).await.unwrap();
    println!("one streamed answer of {DELTAS} kernel deltas:");
    println!("  time to first byte       {:?}", run.ttfb);
    println!("  time to first content    {:?}", run.first_content.unwrap_or_default());
    println!("  time to RUN_FINISHED     {:?}", run.total);
    println!(
        "  {} events, {} TEXT_MESSAGE_CONTENT ({:.0} deltas/s through the kernel and renderer)",
        run.events,
        run.content_events,
        DELTAS as f64 / run.total.as_secs_f64()
    );

    let all = concurrent(CONCURRENT, |i| {
        let (client, url) = (client.clone(), url.clone());
        async move { stream(&client, &url, &format!("c{i}"), "@deltas 200").await }
    })
    .await;
    let (ttfbs, totals) = (&all.ttfbs, &all.totals);
    println!("{CONCURRENT} concurrent runs (@deltas 200), each on its own thread:");
    println!("  finished {}/{CONCURRENT}, errors {}", all.finished, all.errors.len());
    println!("  time to first byte   p50 {:?}  p99 {:?}", percentile(ttfbs, 0.5), percentile(ttfbs, 0.99));
    println!("  time to RUN_FINISHED p50 {:?}  p99 {:?}", percentile(totals, 0.5), percentile(totals, 0.99));
    println!("  wall {:?}", all.wall);
    if let Some(err) = all.errors.first() {
        println!("  first error: {err}");
    }
}

//! AG-UI benchmark: prints figures, asserts nothing.
//!
//! `cargo build -p superpi-cli && cargo run -p superpi-agui --example bench`
//! (add `--release` to both for release figures; SUPERPI_BIN overrides the binary).
//!
//! 1. One streamed mock answer (`@deltas N`): time to first byte, to the first
//!    TEXT_MESSAGE_CONTENT, to RUN_FINISHED, and how many content events carried it.
//! 2. 200 concurrent runs on 200 threads: how many finished, p50/p99 time to first byte and to
//!    RUN_FINISHED, errors, wall time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{Server, http, run_input};

const DELTAS: usize = 10_000;
const CONCURRENT: usize = 200;

struct Run {
    ttfb: Duration,
    first_content: Option<Duration>,
    total: Duration,
    events: usize,
    content_events: usize,
    finished: bool,
}

async fn stream(client: &reqwest::Client, url: &str, thread: &str, prompt: &str) -> Result<Run, String> {
    let start = Instant::now();
    let body = run_input(thread, "bench", prompt);
    let mut resp = client.post(url).json(&body).send().await.map_err(|e| e.to_string())?;
    if resp.status() != 200 {
        return Err(format!("HTTP {}", resp.status()));
    }
    let mut ttfb = None;
    let mut first_content = None;
    let mut text = String::new();
    let (mut events, mut content_events) = (0, 0);
    while let Some(bytes) = resp.chunk().await.map_err(|e| e.to_string())? {
        ttfb.get_or_insert_with(|| start.elapsed());
        text.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            events += 1;
            if event.contains("\"type\":\"TEXT_MESSAGE_CONTENT\"") {
                content_events += 1;
                first_content.get_or_insert_with(|| start.elapsed());
            }
            if event.contains("\"type\":\"RUN_FINISHED\"") || event.contains("\"type\":\"RUN_ERROR\"") {
                return Ok(Run {
                    ttfb: ttfb.unwrap_or_default(),
                    first_content,
                    total: start.elapsed(),
                    events,
                    content_events,
                    finished: event.contains("RUN_FINISHED"),
                });
            }
        }
    }
    Err("the stream ended before the run did".into())
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    // The binary sits beside `examples/`, where the test helper does not look.
    if std::env::var_os("SUPERPI_BIN").is_none()
        && let Some(dir) = std::env::current_exe().ok().and_then(|e| e.parent()?.parent().map(|d| d.to_path_buf()))
    {
        // SAFETY: set before any other thread of this process exists.
        unsafe { std::env::set_var("SUPERPI_BIN", dir.join("superpi")) };
    }
    tokio::runtime::Runtime::new().unwrap().block_on(bench());
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

    let start = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENT)
        .map(|i| {
            let client = client.clone();
            let url = url.clone();
            tokio::spawn(async move { stream(&client, &url, &format!("c{i}"), "@deltas 200").await })
        })
        .collect();
    let mut ttfbs = Vec::new();
    let mut totals = Vec::new();
    let mut errors = Vec::new();
    let mut finished = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(run) => {
                finished += usize::from(run.finished);
                ttfbs.push(run.ttfb);
                totals.push(run.total);
            }
            Err(err) => errors.push(err),
        }
    }
    let wall = start.elapsed();
    ttfbs.sort();
    totals.sort();
    println!("{CONCURRENT} concurrent runs (@deltas 200), each on its own thread:");
    println!("  finished {finished}/{CONCURRENT}, errors {}", errors.len());
    println!("  time to first byte   p50 {:?}  p99 {:?}", pct(&ttfbs, 0.5), pct(&ttfbs, 0.99));
    println!("  time to RUN_FINISHED p50 {:?}  p99 {:?}", pct(&totals, 0.5), pct(&totals, 0.99));
    println!("  wall {wall:?}");
    if let Some(err) = errors.first() {
        println!("  first error: {err}");
    }
}

//! Gateway benchmark: prints figures, asserts nothing.
//!
//! `cargo build -p superpi-cli && cargo run -p superpi-openai --example bench`
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

const DELTAS: usize = 10_000;
const CONCURRENT: usize = 200;

struct Run {
    ttfb: Duration,
    first_content: Option<Duration>,
    total: Duration,
    chunks: usize,
    content_chunks: usize,
    done: bool,
}

async fn stream(client: &reqwest::Client, url: &str, prompt: &str, session: Option<String>) -> Result<Run, String> {
    let start = Instant::now();
    let mut req = client.post(url).body(chat_body("superpi-code", true, prompt).to_string());
    if let Some(id) = session {
        req = req.header("x-session-id", id);
    }
    let mut resp = req.send().await.map_err(|e| e.to_string())?;
    if resp.status() != 200 {
        return Err(format!("HTTP {}", resp.status()));
    }
    let mut ttfb = None;
    let mut first_content = None;
    let mut text = String::new();
    let mut chunks = 0;
    let mut content_chunks = 0;
    while let Some(bytes) = resp.chunk().await.map_err(|e| e.to_string())? {
        ttfb.get_or_insert_with(|| start.elapsed());
        text.push_str(&String::from_utf8_lossy(&bytes));
        // Count whole events only; keep an unfinished one for the next read.
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            chunks += 1;
            if event.contains("\"content\":\"") && !event.contains("\"content\":\"\"") {
                content_chunks += 1;
                first_content.get_or_insert_with(|| start.elapsed());
            }
            if event.starts_with("data: [DONE]") {
                return Ok(Run {
                    ttfb: ttfb.unwrap_or_default(),
                    first_content,
                    total: start.elapsed(),
                    chunks,
                    content_chunks,
                    done: true,
                });
            }
        }
    }
    Ok(Run {
        ttfb: ttfb.unwrap_or_default(),
        first_content,
        total: start.elapsed(),
        chunks,
        content_chunks,
        done: false,
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    if std::env::var_os("SUPERPI_BIN").is_none() {
        let exe = std::env::current_exe().unwrap();
        let bin = exe.parent().and_then(|examples| examples.parent()).unwrap().join("superpi");
        // SAFETY: set before any thread of ours reads the environment.
        unsafe { std::env::set_var("SUPERPI_BIN", bin) };
    }
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
    println!("  SSE events                {} ({} with content)", run.chunks, run.content_chunks);
    println!(
        "  content chunks/s          {:.0}",
        run.content_chunks as f64 / streaming.as_secs_f64().max(f64::EPSILON)
    );
    println!("  ended with [DONE]         {}", run.done);

    let start = Instant::now();
    let mut tasks = Vec::with_capacity(CONCURRENT);
    for i in 0..CONCURRENT {
        let client = client.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            stream(&client, &url, "@deltas 50\nconcurrent", Some(format!("bench-{i}"))).await
        }));
    }
    let mut ttfbs = Vec::new();
    let mut completed = 0;
    let mut errors = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Ok(run) if run.done => {
                completed += 1;
                ttfbs.push(run.ttfb);
            }
            Ok(_) => errors.push("stream ended without [DONE]".to_string()),
            Err(e) => errors.push(e),
        }
    }
    let wall = start.elapsed();
    ttfbs.sort();
    println!("{CONCURRENT} concurrent streamed requests (@deltas 50, one session each):");
    println!("  completed                 {completed}/{CONCURRENT}");
    println!("  errors                    {}", errors.len());
    for e in errors.iter().take(5) {
        println!("    {e}");
    }
    println!("  time to first byte p50    {}", ms(percentile(&ttfbs, 0.50)));
    println!("  time to first byte p99    {}", ms(percentile(&ttfbs, 0.99)));
    println!("  wall time                 {}", ms(wall));
}

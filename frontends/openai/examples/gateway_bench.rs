//! Gateway benchmark: prints figures, asserts nothing.
//!
//! `cargo build -p superpi-cli && cargo run -p superpi-openai --example gateway_bench`
//! (add `--release` to both for release figures; SUPERPI_BIN overrides the binary).
//!
//! Through superpi-tests' `bench::streamed_answers`: one streamed mock answer (`@deltas N`):
//! time to first byte, to first content, and content chunks per second; then 200 concurrent
//! streamed requests, one session each: how many completed, p50/p99 time to first byte,
//! errors, wall time.
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
        let plan = StreamedAnswers { deltas: 10_000, concurrent: 200, concurrent_deltas: 50, end: "[DONE]" };
        streamed_answers(plan, |session, prompt| stream(client.clone(), url.clone(), session, prompt)).await;
    });
}

//! AG-UI benchmark: prints figures, asserts nothing.
//!
//! `cargo build -p superpi-cli && cargo run -p superpi-agui --example agui_bench`
//! (add `--release` to both for release figures; SUPERPI_BIN overrides the binary).
//!
//! Through superpi-tests' `bench::streamed_answers`: one streamed mock answer (`@deltas N`):
//! time to first byte, to the first TEXT_MESSAGE_CONTENT, to RUN_FINISHED, and how many
//! content events carried it; then 200 concurrent runs on 200 threads: how many finished,
//! p50/p99 time to first byte and to RUN_FINISHED, errors, wall time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::{Server, http, run_input};
use superpi_tests::bench::{SseTimer, StreamTiming, StreamedAnswers, streamed_answers, time_response};

/// One run on `thread`, timed until RUN_FINISHED (finished), RUN_ERROR or a cut stream.
async fn stream(client: reqwest::Client, url: String, thread: String, prompt: String) -> Result<StreamTiming, String> {
    let start = Instant::now();
    let body = run_input(&thread, "bench", &prompt);
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
    superpi_tests::bench::run(async {
        let server = Server::start(&[], &[]);
        let (client, url) = (http(), server.url("/agui/v1/run"));
        let plan = StreamedAnswers { deltas: 10_000, concurrent: 200, concurrent_deltas: 200, end: "RUN_FINISHED" };
        streamed_answers(plan, |thread, prompt| stream(client.clone(), url.clone(), thread, prompt)).await;
    });
}

//! Against the real APIs. Never in CI: each test is ignored, and runs with
//! `cargo test -p superpi-providers --test all live:: -- --ignored` when its key is set; a run without
//! the key fails rather than passing in silence.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use futures::StreamExt;
use superpi_proto::Message;
use superpi_providers::{ModelRequest, ProvidersConfig, StreamEvent, resolve, validate};

async fn say_ok(model: &str, key: &str) {
    assert!(std::env::var(key).is_ok_and(|v| !v.is_empty()), "set {key} to run this test");
    let provider = resolve(model, &ProvidersConfig::from_env()).unwrap();
    let request = ModelRequest {
        model: model.into(),
        messages: vec![Message::user_text("Answer with the single word: ok")],
        max_tokens: Some(64),
        ..Default::default()
    };
    let events: Vec<StreamEvent> = provider.stream(request).collect().await;
    validate(&events).unwrap();
    let Some(StreamEvent::Done(terminal)) = events.last() else { panic!("{:?}", events.last()) };
    assert!(terminal.message.text().to_lowercase().contains("ok"), "{:?}", terminal.message);
}

#[tokio::test]
#[ignore = "calls the real OpenAI API; run with OPENAI_API_KEY set and --ignored"]
async fn openai_live() {
    say_ok("gpt-4o-mini", "OPENAI_API_KEY").await;
}

#[tokio::test]
#[ignore = "calls the real Anthropic API; run with ANTHROPIC_API_KEY set and --ignored"]
async fn anthropic_live() {
    say_ok("claude-haiku-4-5", "ANTHROPIC_API_KEY").await;
}

#[tokio::test]
#[ignore = "calls the real Gemini API; run with GEMINI_API_KEY set and --ignored"]
async fn gemini_live() {
    say_ok("gemini-2.5-flash", "GEMINI_API_KEY").await;
}

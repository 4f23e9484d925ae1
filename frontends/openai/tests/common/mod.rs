//! A real `superpi gateway` process for the end-to-end tests and the benchmark.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use superpi_tests::{KillOnDrop, TestEnv};

pub struct Gateway {
    pub env: TestEnv,
    /// Killed when this is dropped.
    pub child: KillOnDrop,
    pub base: String,
}

impl Gateway {
    /// Starts `superpi gateway --port 0` with these extra arguments and variables.
    pub fn start(args: &[&str], vars: &[(&str, &str)]) -> Gateway {
        Self::start_in(TestEnv::new(), args, vars)
    }

    pub fn start_in(env: TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Gateway {
        let (child, base) = spawn(&env, args, vars);
        Gateway { env, child, base }
    }

    /// Stops this gateway process (the kernel runs on) and starts a new one in the same
    /// environment.
    pub fn restart(&mut self, args: &[&str], vars: &[(&str, &str)]) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (child, base) = spawn(&self.env, args, vars);
        self.child = child;
        self.base = base;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

fn spawn(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> (KillOnDrop, String) {
    env.spawn_http(&[&["gateway", "--port", "0"], args].concat(), vars)
}

pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().unwrap()
}

/// The `data:` payloads of an SSE body, in order.
pub fn sse_events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            block
                .lines()
                .map(|line| line.strip_prefix("data: ").unwrap_or_else(|| panic!("not a data line: {line:?}")))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

/// What a client reads from a whole stream.
#[derive(Debug, Default)]
pub struct Streamed {
    pub chunks: Vec<Value>,
    pub content: String,
    pub reasoning: String,
    pub finish_reasons: Vec<String>,
    pub usage: Vec<Value>,
    pub done: bool,
    /// The error object that ended the stream (a failed turn).
    pub error: Option<Value>,
}

pub fn read_stream(body: &str) -> Streamed {
    let mut out = Streamed::default();
    let events = sse_events(body);
    for (i, data) in events.iter().enumerate() {
        if data == "[DONE]" {
            assert_eq!(i, events.len() - 1, "[DONE] must be last");
            out.done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(data).unwrap();
        if let Some(error) = chunk.get("error") {
            // An error object ends the answer: only [DONE] may follow it.
            assert!(out.error.is_none(), "two error objects");
            assert_eq!(i + 2, events.len(), "the error object must come just before [DONE]");
            out.error = Some(error.clone());
            continue;
        }
        assert_eq!(chunk["object"], "chat.completion.chunk");
        for choice in chunk["choices"].as_array().unwrap() {
            out.content.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
            out.reasoning.push_str(choice["delta"]["reasoning_content"].as_str().unwrap_or(""));
            if let Some(reason) = choice["finish_reason"].as_str() {
                out.finish_reasons.push(reason.to_string());
            }
            assert!(choice["delta"].get("tool_calls").is_none(), "the gateway never sends tool_calls");
        }
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            out.usage.push(usage.clone());
        }
        out.chunks.push(chunk);
    }
    out
}

pub fn chat_body(model: &str, stream: bool, prompt: &str) -> Value {
    serde_json::json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": prompt}]})
}

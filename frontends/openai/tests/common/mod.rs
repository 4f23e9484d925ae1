//! A real `superpi gateway` process for the end-to-end tests and the benchmark.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Stdio};

use serde_json::Value;
use superpi_tests::TestEnv;

pub struct Gateway {
    pub env: TestEnv,
    pub child: Child,
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

fn spawn(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> (Child, String) {
    let mut all = vec!["gateway", "--port", "0"];
    all.extend_from_slice(args);
    let mut cmd = env.command(&all);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("spawn superpi gateway");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let base = line
        .trim()
        .rsplit(' ')
        .next()
        .filter(|url| url.starts_with("http://"))
        .unwrap_or_else(|| panic!("the gateway did not announce its address: {line:?}"))
        .to_string();
    (child, base)
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the gateway binary expecting it to exit; returns (success, stderr).
pub fn run_to_exit(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> (bool, String) {
    let mut all = vec!["gateway"];
    all.extend_from_slice(args);
    let mut cmd = env.command(&all);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    (status.success(), err)
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

//! A real `superpi agui` process for the end-to-end tests, an SSE reader, and a checker of
//! the event order rules that `@ag-ui/client`'s verifier enforces.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use superpi_tests::{KillOnDrop, TestEnv};

pub struct Server {
    pub env: TestEnv,
    /// Killed when this is dropped.
    pub child: KillOnDrop,
    pub base: String,
}

impl Server {
    /// Starts `superpi agui --port 0` with these extra arguments and variables.
    pub fn start(args: &[&str], vars: &[(&str, &str)]) -> Server {
        Self::start_in(TestEnv::new(), args, vars)
    }

    pub fn start_in(env: TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Server {
        let mut all = vec!["agui", "--port", "0"];
        all.extend_from_slice(args);
        let (child, base) = env.spawn_http(&all, vars);
        Server { env, child, base }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn run(&self, http: &reqwest::Client, body: &Value) -> Sse {
        let resp = http.post(self.url("/agui/v1/run")).json(body).send().await.unwrap();
        assert_eq!(resp.status(), 200, "run refused: {:?}", resp.text().await);
        Sse::new(resp)
    }

    pub async fn attach(&self, http: &reqwest::Client, thread: &str) -> Sse {
        let resp = http.get(self.url(&format!("/agui/v1/sessions/{thread}/events"))).send().await.unwrap();
        assert_eq!(resp.status(), 200, "attach refused: {:?}", resp.text().await);
        Sse::new(resp)
    }

    pub async fn input(&self, http: &reqwest::Client, thread: &str, body: Value) -> (u16, Value) {
        let resp = http.post(self.url(&format!("/agui/v1/sessions/{thread}/input"))).json(&body).send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap())
    }
}

pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().unwrap()
}

/// A `RunAgentInput` with one user message.
pub fn run_input(thread: &str, run: &str, prompt: &str) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "messages": [{"id": format!("{run}-u"), "role": "user", "content": prompt}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    })
}

/// An SSE stream read event by event.
pub struct Sse {
    resp: reqwest::Response,
    buf: Vec<u8>,
    /// How much of `buf` holds no event end (a big event is not searched again per chunk).
    scanned: usize,
    /// Every byte read, to check the framing.
    pub raw: Vec<u8>,
}

/// How long a test waits for the next event before it fails.
const EVENT_WAIT: Duration = Duration::from_secs(30);

impl Sse {
    pub fn new(resp: reqwest::Response) -> Sse {
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        Sse { resp, buf: Vec::new(), scanned: 0, raw: Vec::new() }
    }

    /// The next event, or None at the end of the stream.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            let from = self.scanned.saturating_sub(1);
            if let Some(pos) = self.buf[from..].windows(2).position(|w| w == b"\n\n").map(|p| p + from) {
                self.scanned = 0;
                let block: Vec<u8> = self.buf.drain(..pos + 2).collect();
                let text = String::from_utf8(block).unwrap();
                let data: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
                if data.is_empty() {
                    continue; // a comment (keep-alive)
                }
                return Some(serde_json::from_str(&data.join("\n")).unwrap());
            }
            self.scanned = self.buf.len();
            let chunk =
                tokio::time::timeout(EVENT_WAIT, self.resp.chunk()).await.expect("no SSE event within 30 s").unwrap();
            match chunk {
                Some(bytes) => {
                    self.raw.extend_from_slice(&bytes);
                    self.buf.extend_from_slice(&bytes);
                }
                None => {
                    assert!(self.buf.iter().all(u8::is_ascii_whitespace), "stream ended mid-event");
                    return None;
                }
            }
        }
    }

    /// Events up to and including the first one of type `ty`.
    pub async fn until(&mut self, ty: &str) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(event) = self.next().await {
            let done = event["type"] == ty;
            out.push(event);
            if done {
                return out;
            }
        }
        panic!("the stream ended before {ty}: {out:#?}");
    }

    /// Every event to the end of the stream.
    pub async fn all(mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(event) = self.next().await {
            out.push(event);
        }
        assert!(!self.raw.contains(&b'\r'), "SSE framing must be LF only");
        out
    }
}

pub fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// Concatenated `TEXT_MESSAGE_CONTENT` deltas of assistant messages.
pub fn text(events: &[Value]) -> String {
    events.iter().filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT").map(|e| e["delta"].as_str().unwrap()).collect()
}

/// The order rules of `@ag-ui/client`'s verifier (RUN_STARTED first, nothing after a run's
/// end but a new run, streams opened before use and closed before RUN_FINISHED), plus the
/// required fields of each event type.
pub fn verify(events: &[Value]) {
    let mut run_open = false;
    let mut errored = false;
    let (mut texts, mut tools, mut reasoning, mut spans) =
        (HashSet::new(), HashSet::new(), HashSet::new(), HashSet::new());
    for (i, e) in events.iter().enumerate() {
        let ty = e["type"].as_str().unwrap_or_else(|| panic!("event {i} has no type: {e}"));
        let id = |key: &str| e[key].as_str().unwrap_or_else(|| panic!("{ty} without {key}: {e}")).to_string();
        if i == 0 {
            assert!(ty == "RUN_STARTED" || ty == "RUN_ERROR", "first event must be RUN_STARTED: {e}");
        }
        if errored {
            assert_eq!(ty, "RUN_STARTED", "nothing may follow RUN_ERROR but a new run: {e}");
        }
        if !run_open && i > 0 {
            assert!(ty == "RUN_STARTED" || ty == "RUN_ERROR", "{ty} outside a run at {i}");
        }
        for (key, value) in e.as_object().unwrap() {
            assert!(!value.is_null(), "{ty}.{key} is null (optional fields are omitted)");
        }
        match ty {
            "RUN_STARTED" => {
                assert!(!run_open, "RUN_STARTED while a run is open at {i}");
                id("threadId");
                id("runId");
                run_open = true;
                errored = false;
            }
            "RUN_FINISHED" => {
                assert!(
                    texts.is_empty() && tools.is_empty() && reasoning.is_empty() && spans.is_empty(),
                    "RUN_FINISHED with open streams at {i}: {texts:?} {tools:?} {reasoning:?} {spans:?}"
                );
                id("threadId");
                id("runId");
                run_open = false;
            }
            "RUN_ERROR" => {
                id("message");
                run_open = false;
                errored = true;
                texts.clear();
                tools.clear();
                reasoning.clear();
                spans.clear();
            }
            "TEXT_MESSAGE_START" => assert!(texts.insert(id("messageId")), "text started twice: {e}"),
            "TEXT_MESSAGE_CONTENT" => {
                assert!(texts.contains(&id("messageId")), "content of no open text: {e}");
                assert!(!id("delta").is_empty(), "empty content delta: {e}");
            }
            "TEXT_MESSAGE_END" => assert!(texts.remove(&id("messageId")), "end of no open text: {e}"),
            "TOOL_CALL_START" => {
                id("toolCallName");
                assert!(tools.insert(id("toolCallId")), "tool call started twice: {e}");
            }
            "TOOL_CALL_ARGS" => assert!(tools.contains(&id("toolCallId")), "args of no open tool call: {e}"),
            "TOOL_CALL_END" => assert!(tools.remove(&id("toolCallId")), "end of no open tool call: {e}"),
            "TOOL_CALL_RESULT" => {
                id("messageId");
                id("toolCallId");
                id("content");
            }
            "REASONING_START" => assert!(spans.insert(id("messageId"))),
            "REASONING_MESSAGE_START" => {
                assert_eq!(e["role"], "reasoning");
                assert!(reasoning.insert(id("messageId")));
            }
            "REASONING_MESSAGE_CONTENT" => assert!(reasoning.contains(&id("messageId"))),
            "REASONING_MESSAGE_END" => assert!(reasoning.remove(&id("messageId"))),
            "REASONING_END" => assert!(spans.remove(&id("messageId"))),
            "STATE_SNAPSHOT" => assert!(e.get("snapshot").is_some()),
            "STATE_DELTA" => {
                for op in e["delta"].as_array().unwrap() {
                    assert!(["add", "remove", "replace", "move", "copy", "test"].contains(&op["op"].as_str().unwrap()));
                    assert!(op["path"].as_str().unwrap().starts_with('/'));
                }
            }
            "MESSAGES_SNAPSHOT" => assert!(e["messages"].is_array()),
            "CUSTOM" => {
                id("name");
                assert!(e.get("value").is_some());
            }
            other => panic!("unexpected event type {other}"),
        }
    }
}

/// Applies the STATE_SNAPSHOT and STATE_DELTA events in order, as a client does.
pub fn final_state(events: &[Value]) -> Value {
    let mut state = Value::Null;
    for e in events {
        match e["type"].as_str() {
            Some("STATE_SNAPSHOT") => state = e["snapshot"].clone(),
            Some("STATE_DELTA") => {
                let patch: json_patch::Patch = serde_json::from_value(e["delta"].clone()).unwrap();
                json_patch::patch(&mut state, &patch).unwrap();
            }
            _ => {}
        }
    }
    state
}

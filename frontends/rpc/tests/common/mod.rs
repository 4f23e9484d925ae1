//! A raw line client for `superpi rpc`, and the server process it talks to.
#![allow(dead_code, clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use superpi_tests::TestEnv;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

/// How long any single read may take before the test fails.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The K of the watch protocol.
pub const K: u64 = 2;

/// A client speaking newline-delimited JSON-RPC over any byte stream, knowing nothing of
/// the server's code.
pub struct LineClient {
    reader: BufReader<Pin<Box<dyn AsyncRead + Send>>>,
    writer: Pin<Box<dyn AsyncWrite + Send>>,
    next_id: u64,
    /// Notifications read while waiting for an answer.
    backlog: VecDeque<Value>,
    /// The highest batch this client has sent an ack for, per watch.
    acked: std::collections::HashMap<u64, u64>,
    /// The highest batch seen, per watch.
    seen: std::collections::HashMap<u64, u64>,
}

impl LineClient {
    pub fn new(read: impl AsyncRead + Send + 'static, write: impl AsyncWrite + Send + 'static) -> Self {
        LineClient {
            reader: BufReader::new(Box::pin(read)),
            writer: Box::pin(write),
            next_id: 1,
            backlog: VecDeque::new(),
            acked: Default::default(),
            seen: Default::default(),
        }
    }

    pub async fn unix(path: &Path) -> Self {
        let stream = tokio::net::UnixStream::connect(path).await.expect("connect to the rpc socket");
        let (read, write) = stream.into_split();
        Self::new(read, write)
    }

    pub async fn send_raw(&mut self, line: &[u8]) {
        self.writer.write_all(line).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// The next line from the server, as JSON; None at end of stream.
    pub async fn read_line(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = tokio::time::timeout(READ_TIMEOUT, self.reader.read_line(&mut line))
            .await
            .expect("the server answered in time")
            .unwrap();
        if n == 0 {
            return None;
        }
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}")))
    }

    /// Sends a raw line and reads lines until a response (or batch) arrives.
    pub async fn raw(&mut self, line: &str) -> Value {
        self.send_raw(line.as_bytes()).await;
        loop {
            let v = self.read_line().await.expect("an answer");
            if is_notification(&v) {
                self.note(&v);
                self.backlog.push_back(v);
                continue;
            }
            return v;
        }
    }

    /// A request; returns the whole response object.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.send_raw(line.as_bytes()).await;
        loop {
            let v = self.read_line().await.unwrap_or_else(|| panic!("the server closed before answering {method}"));
            if is_notification(&v) {
                self.note(&v);
                self.backlog.push_back(v);
                continue;
            }
            assert_eq!(v["id"], json!(id), "answers come by id: {v}");
            return v;
        }
    }

    /// A request that must succeed; returns its result.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let v = self.request(method, params).await;
        assert!(v.get("error").is_none(), "{method} failed: {v}");
        v["result"].clone()
    }

    /// A request that must fail; returns its error object.
    pub async fn err(&mut self, method: &str, params: Value) -> Value {
        let v = self.request(method, params).await;
        assert!(v.get("result").is_none(), "{method} should have failed: {v}");
        v["error"].clone()
    }

    /// A notification already read while waiting for an answer, if any.
    pub fn try_backlog(&mut self) -> Option<Value> {
        self.backlog.pop_front()
    }

    /// The next notification.
    pub async fn notification(&mut self) -> Value {
        if let Some(v) = self.backlog.pop_front() {
            return v;
        }
        let v = self.read_line().await.expect("a notification");
        assert!(is_notification(&v), "expected a notification, got {v}");
        self.note(&v);
        v
    }

    /// Checks the K bound as batches arrive: a batch past K beyond our last ack is a bug.
    fn note(&mut self, v: &Value) {
        if v["method"] != "session.event" {
            return;
        }
        let watch = v["params"]["watch"].as_u64().unwrap();
        let batch = v["params"]["batch"].as_u64().unwrap();
        let seen = self.seen.entry(watch).or_default();
        assert_eq!(batch, *seen + 1, "batches of a watch are numbered without gaps");
        *seen = batch;
        let acked = self.acked.get(&watch).copied().unwrap_or(0);
        assert!(batch - acked <= K, "batch {batch} arrived with only {acked} acked (K = {K})");
    }

    /// Acks a batch as a notification (no answer to wait for).
    pub async fn ack_quietly(&mut self, watch: u64, batch: u64) {
        self.acked.insert(watch, batch);
        let line = json!({"jsonrpc": "2.0", "method": "session.ack", "params": {"watch": watch, "batch": batch}});
        self.send_raw(line.to_string().as_bytes()).await;
    }

    /// Reads the events of a watch, acking every batch, until `stop` matches an event.
    pub async fn events_until(&mut self, watch: u64, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let n = self.notification().await;
            if n["method"] != "session.event" || n["params"]["watch"] != json!(watch) {
                continue;
            }
            let batch = n["params"]["batch"].as_u64().unwrap();
            self.ack_quietly(watch, batch).await;
            for event in n["params"]["events"].as_array().unwrap() {
                events.push(event.clone());
                if stop(event) {
                    return events;
                }
            }
        }
    }

    /// Closes the writing side (the server sees end of input).
    pub async fn close(&mut self) {
        self.writer.shutdown().await.unwrap();
        // A pipe closes only when its end is dropped.
        self.writer = Box::pin(tokio::io::sink());
    }
}

pub fn is_notification(v: &Value) -> bool {
    v.get("method").is_some() && v.get("id").is_none()
}

pub fn is_type(t: &'static str) -> impl Fn(&Value) -> bool {
    move |e: &Value| e["type"] == t
}

pub fn turn_end(e: &Value) -> bool {
    matches!(e["type"].as_str(), Some("turn_completed" | "turn_error" | "turn_cancelled"))
}

/// A running `superpi rpc --unix` server.
pub struct UnixServer {
    pub child: Child,
    pub socket: PathBuf,
}

impl UnixServer {
    pub async fn start(env: &TestEnv, extra_env: &[(&str, &str)]) -> UnixServer {
        let socket = env.path().join("rpc.sock");
        let (child, _) = spawn_listening(env, &["rpc", "--unix", socket.to_str().unwrap()], extra_env).await;
        UnixServer { child, socket }
    }

    pub async fn client(&self) -> LineClient {
        LineClient::unix(&self.socket).await
    }
}

/// A `superpi rpc --stdio` server and the client on its pipes.
pub fn stdio(env: &TestEnv, extra_env: &[(&str, &str)]) -> (Child, LineClient) {
    let mut cmd = Command::from(env.command(&["rpc", "--stdio"]));
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn superpi rpc --stdio");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    (child, LineClient::new(stdout, stdin))
}

/// Opens a conversation and returns its id.
pub async fn open(client: &mut LineClient) -> i64 {
    client.ok("session.open", json!({})).await["conversation_id"].as_i64().unwrap()
}

/// Starts a watch and returns its id.
pub async fn watch(client: &mut LineClient, conversation_id: i64, interactive: bool) -> u64 {
    let r = client.ok("session.watch", json!({"conversation_id": conversation_id, "interactive": interactive})).await;
    assert_eq!(r["conversation_id"], json!(conversation_id));
    r["watch"].as_u64().unwrap()
}

/// Spawns a listening server; returns it and the address from its ready line on stderr.
pub async fn spawn_listening(env: &TestEnv, args: &[&str], extra_env: &[(&str, &str)]) -> (Child, String) {
    let mut cmd = Command::from(env.command(args));
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn superpi rpc");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let address = loop {
        let line = tokio::time::timeout(READ_TIMEOUT, lines.next_line())
            .await
            .expect("the server started in time")
            .unwrap()
            .expect("the server exited before listening");
        if let Some((_, address)) = line.split_once("listening on ") {
            break address.trim().to_string();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("rpc: {line}")
        }
    });
    (child, address)
}

//! Benchmark of `superpi rpc` (prints figures, asserts nothing).
//!
//! 1. Events per second delivered to one watching client that acks every batch, with the
//!    same turn watched straight through superpi-client for comparison.
//! 2. 100 clients watching 100 conversations at once: total events per second, and the
//!    memory of the kernel and of the RPC server.
//!
//! Run: `cargo build --release -p superpi-cli && cargo run --release -p superpi-rpc --example rpc_bench`
//! (`BENCH_DELTAS` and `BENCH_CLIENTS`, `BENCH_CLIENT_DELTAS` change the sizes; `SUPERPI_BIN`
//! picks another binary).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods, clippy::print_stdout)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use superpi_tests::TestEnv;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::process::Command;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A minimal line client: requests by id, session.event batches acked as notifications.
struct Client {
    read: BufReader<OwnedReadHalf>,
    write: OwnedWriteHalf,
    next_id: u64,
    line: String,
    /// Notifications read while waiting for an answer.
    backlog: std::collections::VecDeque<Value>,
}

impl Client {
    async fn connect(socket: &std::path::Path) -> Client {
        let (read, write) = UnixStream::connect(socket).await.unwrap().into_split();
        Client {
            read: BufReader::with_capacity(1 << 16, read),
            write,
            next_id: 1,
            line: String::new(),
            backlog: Default::default(),
        }
    }

    async fn send(&mut self, value: &Value) {
        let mut line = serde_json::to_vec(value).unwrap();
        line.push(b'\n');
        self.write.write_all(&line).await.unwrap();
    }

    async fn read(&mut self) -> Value {
        self.line.clear();
        let n = self.read.read_line(&mut self.line).await.unwrap();
        assert!(n > 0, "the server closed");
        serde_json::from_str(&self.line).unwrap()
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let v = self.read().await;
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
            if v.get("method").is_some() {
                self.backlog.push_back(v);
            }
        }
    }

    /// Reads batches until turn_completed, acking each; returns (events, batches, first event time).
    /// Batches are read into a light struct (event types only), so the figure is the server's.
    async fn drain_turn(&mut self, watch: u64) -> (u64, u64, Option<Instant>) {
        let (mut events, mut batches, mut first) = (0u64, 0u64, None);
        loop {
            let note: Note = match self.backlog.pop_front() {
                Some(v) => serde_json::from_value(v).unwrap(),
                None => {
                    self.line.clear();
                    let n = self.read.read_line(&mut self.line).await.unwrap();
                    assert!(n > 0, "the server closed");
                    serde_json::from_str(&self.line).unwrap()
                }
            };
            let Some(params) = note.params.filter(|_| note.method.as_deref() == Some("session.event")) else {
                continue;
            };
            first.get_or_insert_with(Instant::now);
            batches += 1;
            self.send(
                &json!({"jsonrpc": "2.0", "method": "session.ack", "params": {"watch": watch, "batch": params.batch}}),
            )
            .await;
            events += params.events.len() as u64;
            if params.events.iter().any(|e| e.kind == "turn_completed") {
                return (events, batches, first);
            }
        }
    }
}

#[derive(serde::Deserialize)]
struct Note {
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<NoteParams>,
}

#[derive(serde::Deserialize)]
struct NoteParams {
    #[serde(default)]
    batch: u64,
    #[serde(default)]
    events: Vec<LightEvent>,
}

#[derive(serde::Deserialize)]
struct LightEvent {
    #[serde(rename = "type")]
    kind: String,
}

fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[tokio::main]
async fn main() {
    if std::env::var_os("SUPERPI_BIN").is_none() {
        let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
        let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target").join(profile).join("superpi");
        // SAFETY: set before any other thread of this program reads the environment.
        unsafe { std::env::set_var("SUPERPI_BIN", &bin) };
    }
    let bin = superpi_tests::superpi_bin();
    println!("binary: {}", bin.display());
    let deltas = env_usize("BENCH_DELTAS", 200_000);
    let clients = env_usize("BENCH_CLIENTS", 100);
    let client_deltas = env_usize("BENCH_CLIENT_DELTAS", 5_000);

    let env = TestEnv::new();
    let socket = env.path().join("rpc.sock");
    let mut server = Command::from(env.command(&["rpc", "--unix", socket.to_str().unwrap()]));
    server.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut server = server.spawn().unwrap();
    let server_pid = server.id().unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap()).lines();
    while let Some(line) = stderr.next_line().await.unwrap() {
        if line.contains("listening on") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });

    // 1. One client.
    let mut c = Client::connect(&socket).await;
    let conv = c.call("session.open", json!({})).await["conversation_id"].as_i64().unwrap();
    // Warm up: the kernel, the mock model and the first connection.
    let w = c.call("session.watch", json!({"conversation_id": conv})).await["watch"].as_u64().unwrap();
    c.call("session.submit", json!({"conversation_id": conv, "prompt": "warm up"})).await;
    c.drain_turn(w).await;

    let start = Instant::now();
    c.call("session.submit", json!({"conversation_id": conv, "prompt": format!("@deltas {deltas}")})).await;
    let (events, batches, first) = c.drain_turn(w).await;
    let elapsed = start.elapsed();
    println!(
        "one client, one turn of {deltas} deltas: {events} events in {batches} batches, {:.3} s, {:.0} events/s \
         (first event {:.2} ms after submit)",
        elapsed.as_secs_f64(),
        events as f64 / elapsed.as_secs_f64(),
        first.map(|f| (f - start).as_secs_f64() * 1000.0).unwrap_or(0.0),
    );

    // The same turn watched straight from the kernel, for comparison.
    let kernel = superpi_client::KernelClient::connect(&env.connect_options("bench")).await.unwrap();
    let direct = kernel.open(Default::default()).await.unwrap().conversation_id;
    let mut sub = kernel.watch(superpi_proto::method::WatchParams::live(direct)).await.unwrap();
    let start = Instant::now();
    kernel.submit_text(direct, &format!("@deltas {deltas}")).await.unwrap();
    let mut n = 0u64;
    while let Some(event) = sub.next().await {
        n += 1;
        if event.body.is_turn_end() {
            break;
        }
    }
    let elapsed = start.elapsed();
    println!(
        "same turn through superpi-client directly: {n} events, {:.3} s, {:.0} events/s",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64()
    );
    let kernel_pid = kernel.status().await.unwrap().pid;

    // 2. Many clients, one conversation each, all turns at once.
    let mut tasks = Vec::new();
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(clients + 1));
    for _ in 0..clients {
        let socket = socket.clone();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(&socket).await;
            let conv = c.call("session.open", json!({})).await["conversation_id"].as_i64().unwrap();
            let w = c.call("session.watch", json!({"conversation_id": conv})).await["watch"].as_u64().unwrap();
            barrier.wait().await;
            c.call("session.submit", json!({"conversation_id": conv, "prompt": format!("@deltas {client_deltas}")}))
                .await;
            let (events, _, _) = c.drain_turn(w).await;
            (events, c)
        }));
    }
    barrier.wait().await;
    let start = Instant::now();
    let (kernel_before, _) = rss_kib(kernel_pid);
    let mut total = 0u64;
    let mut keep = Vec::new();
    for task in tasks {
        let (events, c) = task.await.unwrap();
        total += events;
        keep.push(c);
    }
    let elapsed = start.elapsed();
    let (kernel_rss, kernel_peak) = rss_kib(kernel_pid);
    let (server_rss, server_peak) = rss_kib(server_pid);
    println!(
        "{clients} clients x {client_deltas} deltas, {clients} conversations at once: {total} events in {:.3} s, \
         {:.0} events/s in total",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );
    println!(
        "kernel memory: RSS {:.1} MiB after (was {:.1} MiB before the run), peak {:.1} MiB",
        kernel_rss as f64 / 1024.0,
        kernel_before as f64 / 1024.0,
        kernel_peak as f64 / 1024.0
    );
    println!(
        "rpc server memory: RSS {:.1} MiB, peak {:.1} MiB",
        server_rss as f64 / 1024.0,
        server_peak as f64 / 1024.0
    );
    drop(keep);
    let _ = server.kill().await;
    tokio::time::sleep(Duration::from_millis(10)).await;
}

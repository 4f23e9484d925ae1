//! Load benchmark: prints figures, asserts nothing.
//!
//! `cargo build --release -p superpi-cli && cargo run --release -p superpi-tests --bin load_bench -- [CONVERSATIONS] [CONNECTIONS] [TURNS]`
//!
//! Opens CONVERSATIONS (default 1,000) conversations through `superpi rpc --unix` over
//! CONNECTIONS (default 50) client connections, then runs one 50-delta turn of the mock model
//! in TURNS of them (default: every one) at once (each connection watches those of its
//! conversations, submits, and acks every batch). Prints the errors, the turn latency (submit
//! sent → its turn end read) p50 and p99, and the kernel's RSS at each phase: idle at start,
//! after the opens (all of them live: the kernel runs with `SUPERPI_LIVE_SOFT_LIMIT` above
//! CONVERSATIONS and a quiet period of 40 s, `SUPERPI_CONVERSATION_IDLE_MS`, longer than the
//! opens take, so this is what that many live conversations cost), the peak during the turns,
//! as the last conversation leaves memory, and once the RSS has settled after that (the
//! kernel gives freed memory back to the system once departures have gathered), and its peak
//! over the whole run (VmHWM). `-- 10000 50 10000` runs 10,000 turns at once.
//!
//! With `SUPERPI_BENCH_POSTGRES=1` the kernel keeps its store in PostgreSQL: a database on a
//! server started from the machine's PostgreSQL binaries, as the tests start it.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use superpi_tests::bench::{percentile, status_mib};
use superpi_tests::{KillOnDrop, TestEnv};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

const QUIET_MS: &str = "40000";
const DELTAS: u32 = 50;

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().expect("a count"));
    let conversations = args.next().unwrap_or(1000);
    let connections = args.next().unwrap_or(50).clamp(1, conversations.max(1));
    let turns = args.next().unwrap_or(conversations).min(conversations);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(bench(conversations, connections, turns));
}

/// The kernel's resident set in MiB.
fn rss_mib(pid: i32) -> f64 {
    status_mib(pid, "VmRSS:")
}

/// `n`'s share of `total` spread over `parts`.
fn share(total: usize, parts: usize, n: usize) -> usize {
    total / parts + usize::from(n < total % parts)
}

async fn bench(conversations: usize, connections: usize, turns: usize) {
    let env = TestEnv::new();
    let soft_limit = (conversations + 1).to_string();
    let mut vars =
        vec![("SUPERPI_CONVERSATION_IDLE_MS", QUIET_MS.to_string()), ("SUPERPI_LIVE_SOFT_LIMIT", soft_limit)];
    let engine = if std::env::var("SUPERPI_BENCH_POSTGRES").is_ok_and(|v| v == "1") {
        let server = superpi_tests::postgres_server::shared().expect("PostgreSQL binaries (see the README)");
        vars.push(("SUPERPI_DATABASE_URL", server.new_database()));
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (_kernel, status) = env.start_kernel(&vars).await;
    let pid = env.kernel_pid().expect("kernel pid");

    let socket = env.path().join("rpc.sock");
    let _rpc = start_rpc(&env, &socket);
    let idle = rss_mib(pid);

    // Opens: each connection opens its share, pipelined.
    let t = Instant::now();
    let mut links = Vec::new();
    for n in 0..connections {
        links.push(tokio::spawn(Link::open(socket.clone(), share(conversations, connections, n))));
    }
    let mut opened = Vec::new();
    let mut errors = 0usize;
    for link in links {
        let (link, failed) = link.await.unwrap();
        errors += failed;
        opened.push(link);
    }
    let open_time = t.elapsed();
    let after_open = rss_mib(pid);
    let live_after_open = status.status().await.map(|s| s.live_conversations).unwrap_or(0);

    // Turns, all at once, while a sampler keeps the kernel's peak RSS.
    let running = Arc::new(AtomicBool::new(true));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (running, peak) = (running.clone(), peak.clone());
        tokio::spawn(async move {
            while running.load(Ordering::Relaxed) {
                peak.fetch_max((rss_mib(pid) * 1024.0) as u64, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let t = Instant::now();
    let running_links: Vec<_> = opened
        .into_iter()
        .enumerate()
        .map(|(n, link)| tokio::spawn(link.run_turns(share(turns, connections, n))))
        .collect();
    let mut latencies = Vec::new();
    for turn in running_links {
        let (mut times, failed) = turn.await.unwrap();
        latencies.append(&mut times);
        errors += failed;
    }
    let turns_time = t.elapsed();
    running.store(false, Ordering::Relaxed);
    sampler.await.unwrap();
    let during = peak.load(Ordering::Relaxed) as f64 / 1024.0;
    let high_water = status_mib(pid, "VmHWM:");
    latencies.sort();

    // The connections closed with their links: nothing holds the conversations any more.
    let t = Instant::now();
    let mut live = u64::MAX;
    while t.elapsed() < Duration::from_secs(120) {
        live = status.status().await.map(|s| s.live_conversations).unwrap_or(0);
        if live == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let evicted_after = t.elapsed();
    let after_eviction = rss_mib(pid);
    // The kernel gives freed memory back a second after departures: wait until its RSS has
    // held still for 2 s (at most 15 s).
    let (settle, mut settled, mut still_since) = (Instant::now(), after_eviction, Instant::now());
    while settle.elapsed() < Duration::from_secs(15) && still_since.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = rss_mib(pid);
        if (now - settled).abs() > 0.05 {
            (settled, still_since) = (now, Instant::now());
        }
    }

    println!(
        "load benchmark ({engine}): {conversations} conversations over {connections} `superpi rpc --unix` connections, {turns} turns"
    );
    println!("  opened in {:.2} s ({live_after_open} live conversations)", open_time.as_secs_f64());
    println!(
        "  {} turns of {DELTAS} deltas at once: {errors} errors, done in {:.2} s; latency p50 {:.0} ms, p99 {:.0} ms",
        latencies.len(),
        turns_time.as_secs_f64(),
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
    );
    println!(
        "  kernel RSS: idle {idle:.1} MiB, after the opens {after_open:.1} MiB, peak during the turns {during:.1} MiB, \
         as the last left memory {after_eviction:.1} MiB ({live} live, {:.1} s after the last turn; quiet period {QUIET_MS} ms), \
         settled after all left {settled:.1} MiB; peak of the whole run (VmHWM) {high_water:.1} MiB",
        evicted_after.as_secs_f64()
    );
}

/// `superpi rpc --unix SOCKET`, once it says it listens.
fn start_rpc(env: &TestEnv, socket: &Path) -> KillOnDrop {
    let mut rpc = env
        .command(&["rpc", "--unix", &socket.display().to_string(), "--workspace", &env.workspace.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn superpi rpc");
    let mut stderr = std::io::BufReader::new(rpc.stderr.take().expect("stderr"));
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        assert!(stderr.read_line(&mut line).expect("rpc's stderr") > 0, "superpi rpc exited before listening");
    }
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    KillOnDrop(rpc)
}

/// One client connection to `superpi rpc` and the conversations it opened.
struct Link {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    out: mpsc::UnboundedSender<String>,
    conversations: Vec<i64>,
    next_id: u64,
}

impl Link {
    async fn open(socket: std::path::PathBuf, count: usize) -> (Link, usize) {
        let stream = UnixStream::connect(&socket).await.expect("connect to superpi rpc");
        let (read, mut write) = stream.into_split();
        let (out, mut queued) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(line) = queued.recv().await {
                if write.write_all(line.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
        let mut link = Link { lines: BufReader::new(read).lines(), out, conversations: Vec::new(), next_id: 1 };
        for _ in 0..count {
            link.request("session.open", json!({}));
        }
        let mut failed = 0;
        for _ in 0..count {
            let answer = link.next_answer().await;
            match answer["result"]["conversation_id"].as_i64() {
                Some(id) => link.conversations.push(id),
                None => failed += 1,
            }
        }
        (link, failed)
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n";
        let _ = self.out.send(line);
        id
    }

    async fn next_line(&mut self) -> Value {
        let line = self.lines.next_line().await.expect("read").expect("superpi rpc closed the connection");
        serde_json::from_str(&line).expect("a JSON line")
    }

    /// The next answer (notifications before it are skipped: none are expected while opening).
    async fn next_answer(&mut self) -> Value {
        loop {
            let message = self.next_line().await;
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// Watches `count` of its conversations, submits a turn in each, and reads until every
    /// turn ended: each turn's latency, and how many failed.
    async fn run_turns(mut self, count: usize) -> (Vec<Duration>, usize) {
        let mut submitted: HashMap<i64, Instant> = HashMap::new();
        let mut submits: HashMap<u64, i64> = HashMap::new();
        self.conversations.truncate(count);
        for conversation_id in self.conversations.clone() {
            self.request("session.watch", json!({"conversation_id": conversation_id}));
            let id = self.request(
                "session.submit",
                json!({"conversation_id": conversation_id, "prompt": format!("@deltas {DELTAS}")}),
            );
            submits.insert(id, conversation_id);
            submitted.insert(conversation_id, Instant::now());
        }
        let (mut latencies, mut failed) = (Vec::new(), 0);
        let mut pending = self.conversations.len();
        while pending > 0 {
            let message = self.next_line().await;
            if let Some(id) = message.get("id").and_then(Value::as_u64) {
                if message.get("error").is_some() {
                    failed += 1;
                    if let Some(conversation) = submits.get(&id) {
                        submitted.remove(conversation);
                        pending -= 1;
                    }
                }
                continue;
            }
            if message["method"] != "session.event" {
                continue;
            }
            let params = &message["params"];
            let ack = json!({"jsonrpc": "2.0", "method": "session.ack", "params": {"watch": params["watch"], "batch": params["batch"]}});
            let _ = self.out.send(ack.to_string() + "\n");
            let conversation = params["conversation_id"].as_i64().unwrap_or_default();
            for event in params["events"].as_array().into_iter().flatten() {
                let end = match event["type"].as_str() {
                    Some("turn_completed") => Some(true),
                    Some("turn_error" | "turn_cancelled") => Some(false),
                    _ => None,
                };
                if let Some(ok) = end
                    && let Some(sent) = submitted.remove(&conversation)
                {
                    latencies.push(sent.elapsed());
                    failed += usize::from(!ok);
                    pending -= 1;
                }
            }
        }
        (latencies, failed)
    }
}

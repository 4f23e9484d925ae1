//! Frontend idle memory: prints each frontend process's resident memory once it has started,
//! answered a first request (which reaches the kernel where the protocol allows) and then sat
//! idle until its RSS held still for a second. Asserts nothing.
//!
//! `cargo build --release -p superpi-cli && cargo run --release -p superpi-tests --bin frontend_idle`
//!
//! The frontends are `superpi acp` and `superpi mcp` (stdio: `initialize` answered),
//! `superpi rpc --unix` (`session.list` answered), `superpi gateway` (`GET /v1/models`
//! answered) and `superpi agui` (a `GET` answered), all against one kernel started first.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use superpi_tests::{KillOnDrop, TestEnv};

fn main() {
    let env = TestEnv::new();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_kernel, _client) = rt.block_on(env.start_kernel(&[]));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("frontend idle RSS ({}; load {})", superpi_tests::superpi_bin().display(), load.trim());
    for (name, rss) in [
        ("superpi acp", acp(&env)),
        ("superpi mcp", mcp(&env)),
        ("superpi rpc --unix", rpc(&env)),
        ("superpi gateway", http(&env, "gateway", "/v1/models")),
        ("superpi agui", http(&env, "agui", "/agui/v1/none")),
    ] {
        println!(
            "  {name:<20} RSS {:5.1} MiB (anonymous {:4.1} MiB, file {:4.1} MiB), {} threads",
            rss.total as f64 / 1024.0,
            rss.anon as f64 / 1024.0,
            rss.file as f64 / 1024.0,
            rss.threads
        );
    }
}

struct Rss {
    total: u64,
    anon: u64,
    file: u64,
    threads: u64,
}

fn status(pid: u32) -> Rss {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    Rss { total: field("VmRSS:"), anon: field("RssAnon:"), file: field("RssFile:"), threads: field("Threads:") }
}

/// The process's RSS once it has held still (within 16 KiB) for a second, at most 10 s.
fn settled(child: &Child) -> Rss {
    let pid = child.id();
    let (start, mut last, mut still_since) = (Instant::now(), status(pid), Instant::now());
    while start.elapsed() < Duration::from_secs(10) && still_since.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(50));
        let now = status(pid);
        if now.total.abs_diff(last.total) > 16 {
            still_since = Instant::now();
        }
        last = now;
    }
    last
}

/// Writes one JSON-RPC line and reads lines until the answer of `id`.
fn exchange(stdin: &mut impl Write, stdout: &mut BufReader<ChildStdout>, request: serde_json::Value) {
    let id = request["id"].clone();
    writeln!(stdin, "{request}").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the frontend closed before answering {request}");
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        if answer["id"] == id {
            assert!(answer.get("error").is_none(), "{answer}");
            return;
        }
    }
}

fn stdio(env: &TestEnv, args: &[&str], requests: &[serde_json::Value], then: &[serde_json::Value]) -> Rss {
    let child = env.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut child = KillOnDrop(child);
    let mut stdin = child.0.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    for request in requests {
        exchange(&mut stdin, &mut stdout, request.clone());
    }
    for notification in then {
        writeln!(stdin, "{notification}").unwrap();
    }
    stdin.flush().unwrap();
    let rss = settled(&child.0);
    drop(stdin);
    rss
}

fn acp(env: &TestEnv) -> Rss {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    stdio(env, &["acp"], &[init], &[])
}

fn mcp(env: &TestEnv) -> Rss {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    stdio(env, &["mcp"], &[init], &[initialized])
}

fn rpc(env: &TestEnv) -> Rss {
    let socket = env.path().join("rpc.sock");
    let mut child = env
        .command(&["rpc", "--unix", &socket.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let child = KillOnDrop(child);
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "superpi rpc exited before listening");
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let stream = UnixStream::connect(&socket).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    writeln!(writer, r#"{{"jsonrpc":"2.0","id":1,"method":"session.list","params":{{}}}}"#).unwrap();
    line.clear();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("\"result\""), "{line}");
    settled(&child.0)
}

fn http(env: &TestEnv, role: &str, path: &str) -> Rss {
    let (child, base) = env.spawn_http(&[role, "--port", "0"], &[]);
    let address = base.trim_start_matches("http://").trim_end_matches('/').to_string();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
    settled(&child.0)
}

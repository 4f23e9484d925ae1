//! Prints figures, asserts nothing: `superpi mcp` against the reference Node server
//! `@modelcontextprotocol/server-filesystem`, driven the same way over stdio pipes.
//!
//! - milliseconds from spawn to the `initialize` result (several spawns; median and min);
//! - p50 and p99 of `tools/call` reading a small file (superpi: `read`, after one warm-up call
//!   that connects to the kernel, which the first call autostarts and is reported apart).
//!
//! `cargo build --release -p superpi-cli && cargo run --release -p superpi-mcp --example mcp_bench`
//! (SUPERPI_BIN picks another binary; FS_SERVER_DIR reuses an npm install of the Node server;
//! BENCH_CALLS sets the number of reads, 500 by default).
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // a benchmark tool: spawns servers, prints

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use superpi_tests::TestEnv;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    /// Spawns the server and returns it with the time until its `initialize` result.
    fn start(mut cmd: Command) -> (Server, Duration) {
        let started = Instant::now();
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server { child, stdin, stdout, next_id: 1 };
        let reply = server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        let elapsed = started.elapsed();
        assert!(reply.get("result").is_some(), "initialize failed: {reply}");
        server.notify("notifications/initialized");
        (server, elapsed)
    }

    fn notify(&mut self, method: &str) {
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "method": method})).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "server closed its output");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1e3
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Figures {
    init: Vec<Duration>,
    first_call: Duration,
    calls: Vec<Duration>,
}

fn measure(name: &str, make: &dyn Fn() -> Command, tool: &str, args: Value, spawns: usize, calls: usize) -> Figures {
    let mut init = Vec::new();
    for _ in 0..spawns {
        let (server, elapsed) = Server::start(make());
        init.push(elapsed);
        server.stop();
    }
    init.sort();
    let (mut server, _) = Server::start(make());
    let started = Instant::now();
    let reply = server.request("tools/call", json!({"name": tool, "arguments": args}));
    let first_call = started.elapsed();
    assert!(reply["result"]["isError"] != json!(true) && reply.get("error").is_none(), "{name}: {reply}");
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let reply = server.request("tools/call", json!({"name": tool, "arguments": args}));
        times.push(started.elapsed());
        assert!(reply.get("result").is_some(), "{name}: {reply}");
    }
    times.sort();
    server.stop();
    Figures { init, first_call, calls: times }
}

fn print(name: &str, f: &Figures) {
    println!(
        "{name:<34} initialize: median {:>7.1} ms  min {:>7.1} ms | first read {:>7.1} ms | read p50 {:>6.2} ms  p99 {:>6.2} ms  ({} calls)",
        ms(f.init[f.init.len() / 2]),
        ms(f.init[0]),
        ms(f.first_call),
        percentile(&f.calls, 0.50),
        percentile(&f.calls, 0.99),
        f.calls.len(),
    );
}

/// The Node server's entry point, installed from npm outside the repository when needed.
fn filesystem_server() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("FS_SERVER_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::temp_dir().join("superpi-bench-server-filesystem"),
    };
    let entry = dir.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if !entry.exists() {
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/server-filesystem"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("npm: {e}"))?;
        if !status.success() || !entry.exists() {
            return Err(format!("npm install @modelcontextprotocol/server-filesystem failed ({status})"));
        }
    }
    Ok(entry)
}

/// SUPERPI_BIN, or the `superpi` of the same profile as this example.
fn superpi_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("SUPERPI_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let bin = profile_dir.join("superpi");
    assert!(bin.exists(), "{} is missing: cargo build -p superpi-cli (same profile)", bin.display());
    bin
}

fn main() {
    let spawns = 9;
    let calls: usize = std::env::var("BENCH_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    let env = TestEnv::new();
    let file = env.workspace.join("small.txt");
    std::fs::write(&file, "a small file\nof three\nlines\n").unwrap();
    println!("small file: {} bytes; {spawns} spawns each for initialize; {calls} reads after one warm-up", 29);

    let bin = superpi_bin();
    println!("superpi binary: {}", bin.display());
    let superpi = measure(
        "superpi mcp",
        &|| {
            let mut cmd = Command::new(&bin);
            cmd.arg("mcp").current_dir(&env.workspace);
            env.apply_env(&mut cmd);
            cmd
        },
        "read",
        json!({"path": "small.txt"}),
        spawns,
        calls,
    );
    print("superpi mcp", &superpi);

    match filesystem_server() {
        Ok(entry) => {
            let workspace: &Path = &env.workspace;
            let make = || {
                let mut cmd = Command::new("node");
                cmd.arg(&entry).arg(workspace).current_dir(workspace);
                cmd
            };
            // Newer releases name the tool read_text_file; older ones read_file.
            let (mut probe, _) = Server::start(make());
            let tools = probe.request("tools/list", json!({}));
            probe.stop();
            let has = |n: &str| tools["result"]["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == n));
            let tool = if has("read_text_file") { "read_text_file" } else { "read_file" };
            let node = measure(
                "server-filesystem (node)",
                &make,
                tool,
                json!({"path": file.display().to_string()}),
                spawns,
                calls,
            );
            print(&format!("server-filesystem ({tool})"), &node);
        }
        Err(err) => println!("server-filesystem: not measured: {err}"),
    }
}

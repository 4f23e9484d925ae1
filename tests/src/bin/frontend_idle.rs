//! Frontend idle memory: prints each frontend process's resident memory once it has started,
//! answered a first request (which reaches the kernel where the protocol allows) and then sat
//! idle until its RSS held still for a second, and where that memory is (its binary's own
//! pages: `superpi-frontend`'s, which `superpi` execs for these roles, or `superpi`'s when
//! SUPERPI_FRONTEND_EXEC=0; other mapped files such as libc; anonymous), with its private part
//! (pages no other process shares) and its proportional share (PSS); then how much of
//! frontends/cli/frontend-hot.ld (the hot-code layout a release `superpi-frontend` is linked
//! with) still names functions of that binary: a toolchain or dependency update renames them,
//! and the layout decays until it is written again (docs/frontend-hot-layout.md). Asserts
//! nothing. Needs binutils (`nm`, `readelf`) for the last line.
//!
//! `cargo build --release -p superpi-cli && cargo run --release -p superpi-tests --bin frontend_idle`
//! (the first builds both binaries)
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
        let mib = |kib: u64| kib as f64 / 1024.0;
        println!(
            "  {name:<20} RSS {:5.1} MiB (binary's file pages {:4.1}, other files {:4.1}, anonymous {:4.1}); private {:4.1} MiB, PSS {:4.1} MiB; {} threads; ran as {}",
            mib(rss.total),
            mib(rss.binary),
            mib(rss.file.saturating_sub(rss.binary)),
            mib(rss.anon),
            mib(rss.private),
            mib(rss.pss),
            rss.threads,
            rss.exe
        );
    }
    println!("{}", hot_layout_report(&superpi_tests::superpi_bin().with_file_name("superpi-frontend")));
}

/// How many of frontend-hot.ld's functions `frontend` still holds, and whether it was linked
/// with the layout (its `.text.hot` section).
fn hot_layout_report(frontend: &std::path::Path) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../frontends/cli/frontend-hot.ld");
    let Ok(script) = std::fs::read_to_string(script) else { return "frontend-hot.ld: none".into() };
    let run = |program: &str, args: &[&str]| {
        let out = std::process::Command::new(program).args(args).arg(frontend).output();
        out.ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let (Some(symbols), Some(sections)) = (run("nm", &["--defined-only"]), run("readelf", &["-S", "-W"])) else {
        return format!("frontend-hot.ld: cannot read {} (nm and readelf from binutils)", frontend.display());
    };
    let symbols: Vec<&str> = symbols.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    let exact: std::collections::HashSet<&str> = symbols.iter().copied().collect();
    // hot_code.py writes three kinds: the whole name, `*` and a legacy name's hash suffix, or
    // a long name's first 120 characters and `*`.
    let legacy: std::collections::HashSet<&str> =
        symbols.iter().filter_map(|s| s.get(s.len().saturating_sub(20)..)).collect();
    let patterns: Vec<&str> =
        script.lines().filter_map(|l| l.trim().strip_prefix("*(.text.")?.strip_suffix(')')).collect();
    let found = patterns
        .iter()
        .filter(|p| match (p.strip_prefix('*'), p.strip_suffix('*')) {
            (Some(suffix), _) => legacy.contains(suffix),
            (None, Some(prefix)) => symbols.iter().any(|s| s.starts_with(prefix)),
            (None, None) => exact.contains(*p),
        })
        .count();
    let linked = sections
        .lines()
        .find(|l| l.contains(" .text.hot "))
        .and_then(|l| l.split_whitespace().skip_while(|w| *w != ".text.hot").nth(4))
        .and_then(|size| u64::from_str_radix(size, 16).ok())
        .map_or("not linked with it".to_string(), |size| format!(".text.hot {:.1} MB", size as f64 / 1e6));
    format!("frontend-hot.ld: {found} of {} functions still found in {} ({linked})", patterns.len(), frontend.display())
}

/// Resident memory in KiB.
struct Rss {
    total: u64,
    anon: u64,
    file: u64,
    /// Resident pages mapped from the process's binary itself.
    binary: u64,
    /// That binary's file name.
    exe: String,
    /// Pages only this process maps.
    private: u64,
    /// Each page divided by the number of processes mapping it.
    pss: u64,
    threads: u64,
}

/// The `Name: N kB` field of a /proc status-like text.
fn kib(text: &str, name: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// The file-backed resident pages (Rss less Anonymous) of every mapping of `path` in
/// `/proc/PID/smaps`: a written data page of the binary is anonymous, counted there.
fn mapped_from(pid: u32, path: &str) -> u64 {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut total: i64 = 0;
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            inside = line.trim_end().ends_with(path);
        } else if inside {
            let value = |v: &str| v.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
            if let Some(v) = line.strip_prefix("Rss:") {
                total += value(v) as i64;
            } else if let Some(v) = line.strip_prefix("Anonymous:") {
                total -= value(v) as i64;
            }
        }
    }
    total.max(0) as u64
}

fn status(pid: u32) -> Rss {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let binary = std::fs::read_link(format!("/proc/{pid}/exe")).map(|p| p.display().to_string()).unwrap_or_default();
    Rss {
        total: kib(&text, "VmRSS:"),
        anon: kib(&text, "RssAnon:"),
        file: kib(&text, "RssFile:"),
        binary: mapped_from(pid, &binary),
        exe: binary.rsplit('/').next().unwrap_or_default().to_string(),
        private: kib(&rollup, "Private_Clean:") + kib(&rollup, "Private_Dirty:"),
        pss: kib(&rollup, "Pss:"),
        threads: kib(&text, "Threads:"),
    }
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

//! Benchmark (prints figures, asserts nothing): milliseconds from spawning `superpi acp` to
//! the `initialize` response and to the `session/new` response, with the kernel already
//! running and with the kernel started on demand.
//!
//! ```text
//! cargo build --release -p superpi-cli
//! cargo run --release -p superpi-acp --example acp_startup [RUNS]
//! ```
//!
//! It uses the `superpi` binary beside this example's build (target/release or
//! target/debug), or `SUPERPI_BIN`. Each on-demand run gets fresh private directories, so
//! its `session/new` includes starting a kernel and creating its database.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use superpi_tests::TestEnv;

fn superpi() -> PathBuf {
    if let Some(p) = std::env::var_os("SUPERPI_BIN") {
        return PathBuf::from(p);
    }
    // target/<profile>/examples/acp_startup -> target/<profile>/superpi
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|p| p.parent()).unwrap();
    let bin = profile_dir.join("superpi");
    assert!(bin.exists(), "{} is missing: build superpi-cli with the same profile first", bin.display());
    bin
}

/// One `superpi acp`: (ms to initialize, ms to session/new).
fn one_run(env: &TestEnv, bin: &PathBuf) -> (f64, f64) {
    let mut cmd = Command::new(bin);
    cmd.arg("acp").current_dir(&env.workspace);
    env.apply_env(&mut cmd);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answer = |id: u64| loop {
        let line = lines.next().expect("a line").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            assert!(v.get("result").is_some(), "request {id} failed: {line}");
            return start.elapsed().as_secs_f64() * 1000.0;
        }
    };
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":1}}}}"#).unwrap();
    let init = answer(1);
    let ws = env.workspace.display().to_string();
    let new = serde_json::json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd": ws, "mcpServers": []}});
    writeln!(stdin, "{new}").unwrap();
    let new = answer(2);
    drop(stdin);
    child.wait().unwrap();
    (init, new)
}

fn stats(name: &str, mut xs: Vec<f64>) {
    xs.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| xs[((xs.len() as f64 - 1.0) * p).round() as usize];
    println!("  {name:<28} median {:7.2} ms   p90 {:7.2} ms   min {:7.2} ms", q(0.5), q(0.9), xs[0]);
}

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let bin = superpi();
    println!("superpi acp startup, {runs} runs each ({})", bin.display());

    // Kernel already running: one environment; a first run starts its kernel.
    let env = TestEnv::new();
    one_run(&env, &bin);
    let (mut init, mut new) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (i, n) = one_run(&env, &bin);
        init.push(i);
        new.push(n);
    }
    println!("kernel already running:");
    stats("spawn -> initialize", init);
    stats("spawn -> session/new", new);
    drop(env);

    // Kernel started on demand: a fresh environment (no kernel, no database) per run.
    let (mut init, mut new) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let env = TestEnv::new();
        let (i, n) = one_run(&env, &bin);
        init.push(i);
        new.push(n);
    }
    println!("kernel started on demand (fresh data dir):");
    stats("spawn -> initialize", init);
    stats("spawn -> session/new", new);
}

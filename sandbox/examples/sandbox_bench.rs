//! Prints what confinement costs: `cargo run --release -p superpi-sandbox --example sandbox_bench`.
//! Asserts nothing. BENCH_BIG_ONLY=1 runs only the 1 GiB part; BENCH_DEFAULT_ONLY=N runs N
//! calls of the default configuration and nothing else (for profiling; BENCH_PAUSE_MS=N waits
//! N ms before each), BENCH_NO_MOUNTS=1, BENCH_NO_CGROUP=1 and BENCH_DISABLED=1 change that configuration; BENCH_LATENCY_ONLY=1 skips the 1 GiB part.
#![allow(clippy::disallowed_methods, clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use superpi_sandbox::{Sandbox, SandboxConfig, ToolCall};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 200;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn plain_once(program: &str, args: &[&str]) -> Duration {
    let t = Instant::now();
    let status = Command::new(program).args(args).stdin(Stdio::null()).stdout(Stdio::null()).status().unwrap();
    assert!(status.success());
    t.elapsed()
}

fn sandbox(data: &std::path::Path, adjust: impl FnOnce(&mut SandboxConfig)) -> Sandbox {
    let mut config = SandboxConfig::new(data.to_path_buf());
    config.tool_exe = std::env::current_exe().unwrap().with_file_name("superpi-sandbox-tool");
    config.tool_args = Vec::new();
    config.default_timeout = Duration::from_secs(600);
    adjust(&mut config);
    Sandbox::new(config).unwrap()
}

fn call(workspace: &std::path::Path, command: &str) -> ToolCall {
    ToolCall {
        conversation_id: 1,
        call_id: "bench".into(),
        name: "bash".into(),
        arguments: json!({ "command": command }),
        workspace: Some(workspace.to_path_buf()),
        network: false,
        read_only: false,
        timeout: None,
        protected: Default::default(),
        allowed_hosts: None,
        extra_roots: Vec::new(),
    }
}

async fn confined_once(sb: &Sandbox, workspace: &std::path::Path, command: &str) -> Duration {
    let t = Instant::now();
    let out = sb.run(call(workspace, command), CancellationToken::new(), None).await;
    assert!(!out.is_error, "{out:?}");
    t.elapsed()
}

#[tokio::main]
async fn main() {
    let root = tempfile::Builder::new().prefix("superpi-bench-").tempdir_in("/var/tmp").unwrap();
    let workspace = root.path().join("ws");
    let data: PathBuf = root.path().join("data");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&data).unwrap();

    let full = sandbox(&data, |c| {
        if std::env::var_os("BENCH_NO_MOUNTS").is_some() {
            c.readonly_outside = false;
        }
        if std::env::var_os("BENCH_DISABLED").is_some() {
            c.disabled = true;
        }
        if std::env::var_os("BENCH_NO_CGROUP").is_some() {
            c.pids_cgroup = false;
        }
    });
    println!("sandbox: {:?}", full.status());
    if let Ok(n) = std::env::var("BENCH_DEFAULT_ONLY") {
        let mut total = Vec::new();
        let mut phases: [Vec<Duration>; 4] = Default::default();
        // Calls spaced as a model's are (BENCH_PAUSE_MS apart), not back to back.
        let pause = std::env::var("BENCH_PAUSE_MS").ok().and_then(|p| p.parse().ok()).map(Duration::from_millis);
        for _ in 0..n.parse::<usize>().unwrap_or(100) {
            if let Some(pause) = pause {
                tokio::time::sleep(pause).await;
            }
            superpi_sandbox::profile::take();
            total.push(confined_once(&full, &workspace, "true").await);
            for (i, (_, d)) in superpi_sandbox::profile::take().0.into_iter().enumerate() {
                phases[i].push(d);
            }
        }
        println!("total {:?} phases {:?}", median(total), phases.map(median));
        return;
    }
    if std::env::var_os("BENCH_BIG_ONLY").is_none() {
        latency(&full, &data, &workspace).await;
    }
    if std::env::var_os("BENCH_LATENCY_ONLY").is_none() {
        big_output(&full, &workspace).await;
    }
}

async fn latency(full: &Sandbox, data: &std::path::Path, workspace: &std::path::Path) {
    let no_mounts = sandbox(data, |c| c.readonly_outside = false);
    let bare = sandbox(data, |c| {
        c.readonly_outside = false;
        c.pids_cgroup = false;
    });
    let unconfined = sandbox(data, |c| c.disabled = true);
    // One run of each variant in turn, so that load from elsewhere on the machine falls on
    // every variant alike. What the default leaves for after its result (its namespace
    // released, its temp dir removed) overlaps the next round's `true`, not the shell it is
    // compared with.
    let mut t: [Vec<Duration>; 6] = Default::default();
    let mut phases: [Vec<Duration>; 5] = Default::default();
    for _ in 0..RUNS {
        t[0].push(plain_once("/bin/true", &[]));
        t[1].push(plain_once("/bin/bash", &["-c", "true"]));
        for (i, sb) in [(2, &unconfined), (3, &bare), (4, &no_mounts)] {
            t[i].push(confined_once(sb, workspace, "true").await);
        }
        superpi_sandbox::profile::take();
        let total = confined_once(full, workspace, "true").await;
        t[5].push(total);
        let mut rest = total;
        for (i, (_, d)) in superpi_sandbox::profile::take().0.into_iter().enumerate() {
            phases[i].push(d);
            rest = rest.saturating_sub(d);
        }
        phases[4].push(rest);
    }
    let [plain_true, plain_bash, launcher_only, confined_bare, confined_no_mounts, confined_full] = t.map(median);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let ratio = |d: Duration| ms(d) / ms(plain_bash);
    println!("median of {RUNS} runs:");
    println!("  plain spawn of true                            {:8.3} ms", ms(plain_true));
    println!("  plain spawn of bash -c true                    {:8.3} ms", ms(plain_bash));
    println!(
        "  launcher, confinement disabled                 {:8.3} ms  ({:.2}x plain bash)",
        ms(launcher_only),
        ratio(launcher_only)
    );
    println!(
        "  confined bash -c true (landlock+seccomp+caps)  {:8.3} ms  ({:.2}x)",
        ms(confined_bare),
        ratio(confined_bare)
    );
    println!(
        "    + pids cgroup                                {:8.3} ms  ({:.2}x)",
        ms(confined_no_mounts),
        ratio(confined_no_mounts)
    );
    println!(
        "    + private mounts and IPC (the default)       {:8.3} ms  ({:.2}x)",
        ms(confined_full),
        ratio(confined_full)
    );
    let [prepare, spawn, run, finish, rest] = phases.map(median);
    println!("  the default, by phase (medians):");
    println!("    prepare (temp dir, ruleset, cgroup, env)     {:8.3} ms", ms(prepare));
    println!("    spawn (clone, confinement steps, exec)       {:8.3} ms", ms(spawn));
    println!("    run (exec to exit, output read)              {:8.3} ms", ms(run));
    println!("    finish (cgroup killed and removed)           {:8.3} ms", ms(finish));
    println!("    the rest (checks, outcome, scheduling)       {:8.3} ms", ms(rest));
}

fn status_kib(field: &str) -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

async fn big_output(full: &Sandbox, workspace: &std::path::Path) {
    let printer = "head -c 1073741824 /dev/zero | tr '\\0' 'x'";
    // /usr/bin/time reports the peak RSS of the largest process of the printing pipeline.
    let command = if std::path::Path::new("/usr/bin/time").exists() {
        format!("/usr/bin/time -f 'confined_peak_rss_kib=%M' -o \"$TMPDIR/t\" sh -c \"{printer}\"; cat \"$TMPDIR/t\"")
    } else {
        printer.to_string()
    };
    let idle = status_kib("VmRSS:");
    let t = Instant::now();
    let out = full.run(call(workspace, &command), CancellationToken::new(), None).await;
    let wall = t.elapsed();
    let peak = status_kib("VmHWM:");
    let spill = out.structured.as_ref().and_then(|s| s["spill_path"].as_str()).unwrap_or("").to_string();
    let marker = "confined_peak_rss_kib=";
    let confined_peak = match out.output.rfind(marker) {
        Some(i) => out.output[i + marker.len()..].lines().next().unwrap_or("").to_string(),
        None => "unknown".to_string(),
    };
    println!("a tool printing 1 GiB:");
    println!("  wall time                                      {:8.2} s", wall.as_secs_f64());
    println!(
        "  total bytes                                    {:>10}",
        out.structured.as_ref().unwrap()["total_bytes"]
    );
    println!("  model text                                     {:>10} bytes", out.output.len());
    println!("  kernel side: idle RSS {idle} KiB, peak RSS {peak} KiB (+{} KiB)", peak - idle);
    println!("  confined printer: peak RSS {confined_peak} KiB");
    if !spill.is_empty() {
        println!("  spill file {} bytes", std::fs::metadata(&spill).map(|m| m.len()).unwrap_or(0));
        let _ = std::fs::remove_file(&spill);
    }
}

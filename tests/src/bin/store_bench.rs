//! The store at scale: prints figures, asserts nothing.
//!
//! `cargo build --release -p superpi-cli && cargo run --release -p superpi-tests --bin store_bench -- [CONVERSATIONS]`
//!
//! One real turn of the mock model (`superpi run`), then CONVERSATIONS (default 1,000,000)
//! copies of its conversation written straight into the SQLite store (superpi_tests::bulk),
//! then, through a kernel started again on that store: `superpi session list` (the first
//! page), later pages of `session.list` (the CLI shows the first only), `superpi session show`
//! of the oldest conversation, a new turn in it (`superpi run --conversation`), deleting
//! another old one, the database's size and the kernel's RSS while it lists.
//!
//! `STORE_BENCH_KEEP=FILE` copies the filled database to FILE; `STORE_BENCH_DB=FILE` starts
//! from a copy of FILE instead of filling one (a database an older build filled: the kernel's
//! start then includes its migrations).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use superpi_client::KernelClient;
use superpi_proto::method::{ListParams, ListResult, Method};
use superpi_tests::TestEnv;
use superpi_tests::bench::{ms, percentile, status_mib};
use superpi_tests::bulk::{Template, copy_conversation};

const RUNS: usize = 5;

fn main() {
    let conversations = std::env::args().nth(1).map(|a| a.parse::<u64>().expect("a count")).unwrap_or(1_000_000);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(bench(conversations));
}

/// The median and the slowest of `runs`.
fn summary(mut runs: Vec<Duration>) -> String {
    runs.sort();
    format!("median {}, slowest {}", ms(percentile(&runs, 0.5)), ms(*runs.last().unwrap()))
}

/// Runs a `superpi` command of `env` `RUNS` times: each run's wall time and the last output.
fn cli(env: &TestEnv, args: &[&str], runs: usize) -> (Vec<Duration>, Output) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let out = env.command(args).output().expect("run superpi");
        times.push(t.elapsed());
        assert!(out.status.success(), "superpi {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        last = Some(out);
    }
    (times, last.unwrap())
}

async fn page(client: &KernelClient, limit: u32, offset: u32) -> (Duration, ListResult) {
    let t = Instant::now();
    let params = ListParams { limit: Some(limit), offset: Some(offset), cursor: None };
    let page: ListResult = client.request(Method::SessionList(params)).await.expect("session.list");
    (t.elapsed(), page)
}

async fn bench(conversations: u64) {
    let env = TestEnv::new();
    let db = env.database_path();
    let t = Instant::now();
    let template = match std::env::var_os("STORE_BENCH_DB") {
        Some(from) => {
            std::fs::create_dir_all(db.parent().unwrap()).unwrap();
            std::fs::copy(&from, &db).expect("copy STORE_BENCH_DB");
            let conn = rusqlite::Connection::open(&db).unwrap();
            let (conversation, turn) = conn
                .query_row(
                    "SELECT min(c.id), min(t.id) FROM conversations c, turns t WHERE t.conversation_id = c.id",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            Template { conversation, turn }
        }
        None => {
            let (mut kernel, client) = env.start_kernel(&[]).await;
            let (ok, err) = env.run_to_exit(&["run", "hello"], &[]);
            assert!(ok, "the template turn: {err}");
            client.shutdown().await.expect("shutdown");
            kernel.wait().expect("the kernel exits");
            copy_conversation(&db, conversations, 50_000).expect("copies")
        }
    };
    let filled = t.elapsed();
    if let Some(keep) = std::env::var_os("STORE_BENCH_KEEP") {
        std::fs::copy(&db, keep).expect("copy to STORE_BENCH_KEEP");
    }
    let size = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0) as f64 / (1024.0 * 1024.0);

    let t = Instant::now();
    let (_kernel, client) = env.start_kernel(&[]).await;
    let started = t.elapsed();
    let pid = env.kernel_pid().expect("kernel pid");
    let idle = status_mib(pid, "VmRSS:");
    let (total, events, entries): (i64, i64, i64) = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let count = |sql: &str| conn.query_row(sql, [template.conversation], |r| r.get(0)).unwrap();
        (
            count("SELECT count(*) FROM conversations WHERE ?1 > 0"),
            count("SELECT count(*) FROM events WHERE conversation_id = ?1"),
            count("SELECT count(*) FROM entries WHERE conversation_id = ?1"),
        )
    };

    // The kernel's RSS while it lists, sampled every 5 ms.
    let sampling = Arc::new(AtomicBool::new(true));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (sampling, peak) = (sampling.clone(), peak.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max((status_mib(pid, "VmRSS:") * 1024.0) as u64, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let (list_cli, out) = cli(&env, &["session", "list"], RUNS);
    let listed = String::from_utf8_lossy(&out.stdout).lines().count().saturating_sub(1);
    let mut pages = Vec::new();
    for (limit, offset) in
        [(100, 0), (100, 1000), (100, total as u32 / 2), (100, total as u32 - 100), (1000, total as u32 - 1000)]
    {
        let mut times = Vec::new();
        let mut len = 0;
        for _ in 0..RUNS {
            let (time, page) = page(&client, limit, offset).await;
            times.push(time);
            len = page.conversations.len();
        }
        pages.push((limit, offset, len, times));
    }
    // The first 100,000 in pages of 1,000, as a program walking the list would.
    let t = Instant::now();
    let mut walked = 0;
    for n in 0..100u32 {
        walked += page(&client, 1000, n * 1000).await.1.conversations.len();
    }
    let walk = t.elapsed();
    // The same walk following each page's `next`: an index seek per page however deep.
    let t = Instant::now();
    let (mut walked_by_cursor, mut cursor) = (0, None);
    for _ in 0..100 {
        let params = ListParams { limit: Some(1000), offset: None, cursor: cursor.take() };
        let page = client.list_page(params).await.expect("session.list");
        walked_by_cursor += page.conversations.len();
        cursor = page.next;
        if cursor.is_none() {
            break;
        }
    }
    let walk_by_cursor = t.elapsed();
    sampling.store(false, Ordering::Relaxed);
    sampler.join().unwrap();
    let listing_peak = peak.load(Ordering::Relaxed) as f64 / 1024.0;

    let oldest = template.copy(1).to_string();
    let (show, out) = cli(&env, &["session", "show", &oldest], RUNS);
    let shown = String::from_utf8_lossy(&out.stdout).lines().count();
    let (turn, _) = cli(&env, &["run", "--conversation", &oldest, "go on"], 3);
    let (_, top) = page(&client, 1, 0).await;
    let on_top = top.conversations.first().map(|c| c.conversation_id.to_string()) == Some(oldest.clone());
    let mut deletes = Vec::new();
    for k in 2..2 + RUNS as u64 {
        let t = Instant::now();
        client.delete(template.copy(k)).await.expect("session.delete");
        deletes.push(t.elapsed());
    }
    let hwm = status_mib(pid, "VmHWM:");
    let wal = std::fs::metadata(db.with_extension("db-wal")).map(|m| m.len()).unwrap_or(0) as f64 / (1024.0 * 1024.0);

    println!(
        "store benchmark (SQLite): {total} stored conversations, each one turn ({events} events, {entries} entries)"
    );
    println!(
        "  filled in {:.1} s; database {size:.0} MiB (WAL {wal:.1} MiB after the runs below)",
        filled.as_secs_f64()
    );
    println!("  kernel started on it in {} (its migrations included); RSS {idle:.1} MiB", ms(started));
    println!("  `superpi session list` ({listed} rows): {}", summary(list_cli));
    for (limit, offset, len, times) in pages {
        println!("  session.list limit {limit} offset {offset} ({len} rows): {}", summary(times));
    }
    println!("  the first 100,000 in pages of 1,000 ({walked} rows): {}", ms(walk));
    println!("  the same by cursor ({walked_by_cursor} rows): {}", ms(walk_by_cursor));
    println!("  kernel RSS while listing: peak {listing_peak:.1} MiB");
    println!("  `superpi session show {oldest}` (the oldest, {shown} lines): {}", summary(show));
    println!("  `superpi run --conversation {oldest} \"go on\"`: {} (then first in the list: {on_top})", summary(turn));
    println!("  session.delete of an old conversation: {}", summary(deletes));
    println!("  kernel VmHWM at the end: {hwm:.1} MiB");
}

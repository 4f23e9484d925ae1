//! End to end: how a kernel stops and what it keeps. `kernel stop` and SIGTERM drain running
//! and queued turns (ended as interrupted, with their tool calls answered, watchers told),
//! and an acknowledged prompt survives a kill -9 right after the acknowledgement.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::time::{Duration, Instant};

use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_tests::{TestEnv, open_and_watch, turn_events, wait};

async fn client(env: &TestEnv) -> KernelClient {
    KernelClient::connect(&env.connect_options("test")).await.expect("connect")
}

fn process_runs(pid: i32) -> bool {
    !superpi_tests::is_zombie(pid)
}

fn turn_status(env: &TestEnv, turn_id: i64) -> (String, Option<String>) {
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    db.query_row("SELECT status, error FROM turns WHERE id = ?1", [turn_id], |r| Ok((r.get(0)?, r.get(1)?))).unwrap()
}

#[test]
fn kernel_stop_returns_once_the_kernel_has_exited_and_removed_its_socket() {
    let env = TestEnv::new();
    assert!(env.command(&["run", "one"]).output().unwrap().status.success());
    let pid = env.kernel_pid().unwrap();
    assert!(process_runs(pid));
    let out = env.command(&["kernel", "stop"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!process_runs(pid), "the kernel {pid} still runs after `kernel stop` returned");
    assert!(!env.locations.socket_path().exists(), "socket removed on stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_running_and_queued_turns_as_interrupted_and_tells_the_watchers() {
    let env = TestEnv::new();
    let client = client(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    let running = client.submit_text(conv, "@tool bash {\"command\": \"sleep 60\"}").await.unwrap();
    let queued = client.submit_text(conv, "the prompt behind it").await.unwrap();
    assert!(queued.queued);
    // The tool runs: stop the kernel under it.
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), sub.next()).await.unwrap().unwrap();
        let started = matches!(event.body, EventBody::ToolStarted { .. });
        seen.push(event);
        if started {
            break;
        }
    }
    let pid = env.kernel_pid().unwrap();
    let stopped_at = Instant::now();
    // SAFETY: kill(2) with the pid of this test's own kernel.
    unsafe { libc::kill(pid, libc::SIGTERM) };

    // The watcher is told how both turns ended before its connection closes.
    seen.extend(turn_events(&mut sub, running.turn_id).await);
    let first_end = seen.last().unwrap().body.clone();
    assert!(matches!(&first_end, EventBody::TurnError { error, .. } if error.contains("interrupted")), "{first_end:?}");
    assert!(
        seen.iter().any(|e| matches!(&e.body, EventBody::ToolCompleted { is_error: true, .. })),
        "the running call got its result"
    );
    let queued_events = turn_events(&mut sub, queued.turn_id).await;
    assert!(
        queued_events
            .iter()
            .any(|e| matches!(&e.body, EventBody::MessageCompleted { .. }) && e.turn_id == Some(queued.turn_id)),
        "the queued prompt is in the history: {queued_events:?}"
    );
    assert!(
        matches!(&queued_events.last().unwrap().body, EventBody::TurnError { error, .. } if error.contains("before it started"))
    );
    assert!(tokio::time::timeout(Duration::from_secs(10), sub.next()).await.unwrap().is_none(), "then it closes");

    wait::until_blocking("the kernel exits after draining", wait::PATIENCE, || !process_runs(pid));
    assert!(
        stopped_at.elapsed() < Duration::from_secs(15),
        "the drain waited on the sleep: {:?}",
        stopped_at.elapsed()
    );
    assert!(!env.locations.socket_path().exists(), "socket removed");
    assert_eq!(turn_status(&env, running.turn_id).0, "interrupted");
    assert_eq!(turn_status(&env, queued.turn_id).0, "interrupted");
    let wal = env.database_path().with_extension("sqlite-wal");
    assert!(std::fs::metadata(&wal).map(|m| m.len() == 0).unwrap_or(true), "the store's log was folded in");

    // A new kernel finds nothing to recover and the history is valid for the next turn.
    let client = self::client(&env).await;
    let history = client.history(conv).await.unwrap();
    let kinds: Vec<&str> = history.entries.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["user", "assistant", "tool_result", "user"]);
    assert_eq!(history.entries[3].message.text(), "the prompt behind it");
    let params = superpi_proto::method::WatchParams::live(conv);
    let mut sub = client.watch(params).await.unwrap();
    let next = client.submit_text(conv, "after the stop").await.unwrap();
    let events = turn_events(&mut sub, next.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_prompt_survives_a_kill_right_after_the_acknowledgement() {
    let env = TestEnv::new();
    let client = client(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, None, false).await;
    let slow = client.submit_text(conv, "@slow 500\nslow enough to queue behind").await.unwrap();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), sub.next()).await.unwrap().unwrap();
        if event.turn_id == Some(slow.turn_id) && matches!(event.body, EventBody::TurnStarted {}) {
            break;
        }
    }
    let queued = client.submit_text(conv, "acknowledged, so kept").await.unwrap();
    assert!(queued.queued);
    env.kill_kernel();
    drop(sub);
    drop(client);

    let client = self::client(&env).await;
    let history = client.history(conv).await.unwrap();
    let prompts: Vec<String> =
        history.entries.iter().filter(|e| e.kind.as_str() == "user").map(|e| e.message.text()).collect();
    assert_eq!(prompts, ["@slow 500\nslow enough to queue behind", "acknowledged, so kept"]);
    assert_eq!(turn_status(&env, queued.turn_id).0, "interrupted");
}

/// A conversation whose stored events exceed 64 MiB loads (`session.history` in pages) and
/// replays (a watch from seq 0, batches cut by bytes) through the client library, and the
/// kernel keeps serving it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_of_more_than_64_mib_loads_and_replays_through_the_client_library() {
    let env = TestEnv::new();
    // A window that holds the whole conversation: this test is about size, not compaction.
    superpi_tests::pages::large_context(&env);
    let client = client(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, None, false).await;
    // One word of 5 MiB: the mock echoes it back, so each turn stores about 10 MiB.
    const WORD: usize = 5 * 1024 * 1024;
    let turns = 7;
    // `superpi session show --json` prints it whole, reading a page at a time: its peak memory
    // follows the page, not the conversation (measured at 2 turns and again at 7).
    let show = || {
        let (ok, out, peak) =
            superpi_tests::pages::output_with_peak_rss(env.command(&["session", "show", &conv.to_string(), "--json"]));
        assert!(ok, "session show failed");
        eprintln!("session show --json: printed {} MiB, peak RSS {} MiB", out.len() >> 20, peak >> 20);
        (out, peak)
    };
    let mut early_peak = None;
    for n in 0..turns {
        if n == 2 {
            early_peak = Some(show().1);
        }
        let prompt = format!("{n}{}", "x".repeat(WORD));
        let turn = client.submit_text(conv, &prompt).await.unwrap();
        let events = turn_events(&mut sub, turn.turn_id).await;
        let end = &events.last().unwrap().body;
        assert!(
            matches!(end, EventBody::TurnCompleted { .. }),
            "turn {n}: {:?}",
            format!("{end:?}").chars().take(300).collect::<String>()
        );
    }
    drop(sub);
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let stored: i64 =
        db.query_row("SELECT SUM(LENGTH(wire)) FROM events WHERE conversation_id = ?1", [conv], |r| r.get(0)).unwrap();
    assert!(stored > 64 * 1024 * 1024, "stored {stored} bytes");

    let first = client.history_page(conv, None).await.unwrap();
    assert!(first.more, "a page stops well before the frame limit");
    let history = client.history(conv).await.unwrap();
    assert_eq!(history.entries.len(), turns * 2);
    for (n, pair) in history.entries.chunks(2).enumerate() {
        assert_eq!(pair[0].message.text().len(), WORD + 1);
        assert!(pair[1].message.text().starts_with(&n.to_string()));
    }

    let params = superpi_proto::method::WatchParams::after(conv, 0);
    let mut replay = client.watch(params).await.unwrap();
    let (mut bytes, mut ends) = (0usize, 0);
    while ends < turns {
        let event = tokio::time::timeout(Duration::from_secs(30), replay.next()).await.unwrap().unwrap();
        if let EventBody::MessageCompleted { content, .. } = &event.body {
            bytes += content
                .iter()
                .map(|b| if let superpi_proto::ContentBlock::Text { text } = b { text.len() } else { 0 })
                .sum::<usize>();
        }
        ends += usize::from(event.body.is_turn_end());
    }
    assert!(bytes > 64 * 1024 * 1024, "replayed {bytes} bytes of messages");
    assert!(client.status().await.is_ok(), "the connection goes on");

    let (out, peak) = show();
    let shown: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(serde_json::from_value::<Vec<superpi_proto::Entry>>(shown["entries"].clone()).unwrap(), history.entries);
    assert_eq!(shown["conversation"]["conversation_id"], conv);
    let early_peak = early_peak.unwrap();
    // Five more turns add 50 MiB to the history: held whole, they would add at least that.
    assert!(
        peak < early_peak + 16 * 1024 * 1024,
        "peak RSS {} MiB printing {} MiB, {} MiB at 2 turns",
        peak >> 20,
        out.len() >> 20,
        early_peak >> 20
    );
}

//! Output: spill past the cap, head and tail for the model, paging a spill file, progress,
//! deadline and cancel.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::Env;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn output_past_the_cap_spills_and_the_read_tool_pages_it() {
    let env = Env::with(|c| c.output_cap_bytes = 256 * 1024);
    common::assert_confinement_available(&env);
    // 200000 numbered lines, about 2.3 MB.
    let out = env.bash("seq 1 200000 | sed 's/^/row /'").await;
    assert!(!out.is_error, "{}", &out.output[..200.min(out.output.len())]);
    let spill = out.structured.as_ref().unwrap()["spill_path"].as_str().unwrap().to_string();
    assert!(spill.ends_with("spill/7/call-bash"), "{spill}");
    let on_disk = std::fs::read_to_string(&spill).unwrap();
    assert_eq!(on_disk.lines().count(), 200000);
    assert!(on_disk.ends_with("row 200000\n"));
    let total = out.structured.as_ref().unwrap()["total_bytes"].as_u64().unwrap();
    assert_eq!(total, on_disk.len() as u64);
    assert!(out.output.starts_with("row 1\nrow 2\n"), "head kept");
    assert!(out.output.trim_end().ends_with("row 200000"), "tail kept");
    assert!(out.output.contains(&spill) && out.output.contains(&total.to_string()));
    assert!(out.output.len() < 64 * 1024, "the model gets a bounded text");

    let out = env.run("read", json!({"path": spill, "offset": 150000, "limit": 2})).await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.output.starts_with("150000\trow 150000\n150001\trow 150001\n"), "{out:?}");
    // Spill files are readable, not writable.
    let out = env.run("write", json!({"path": spill, "content": "x"})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
}

/// A call's ruleset may be one made for an earlier call with the same rules: one made before
/// the conversation's first spill must not serve the call after it.
#[tokio::test]
async fn a_spill_made_after_file_tool_calls_is_readable_by_the_next_one() {
    let env = Env::new();
    common::assert_confinement_available(&env);
    std::fs::write(env.workspace.join("notes.txt"), "a note\n").unwrap();
    for _ in 0..6 {
        let out = env.run("read", json!({"path": "notes.txt"})).await;
        assert!(!out.is_error && out.output.contains("a note"), "{out:?}");
    }
    // The conversation's first spill (conversation 7, as `Env::call` makes them), written as
    // the sandbox writes one.
    let spill = env.data_dir.join("spill/7/call-earlier");
    std::fs::create_dir_all(spill.parent().unwrap()).unwrap();
    std::fs::write(&spill, "spilled line\n").unwrap();
    for _ in 0..3 {
        let out = env.run("read", json!({"path": spill})).await;
        assert!(!out.is_error && out.output.contains("spilled line"), "{out:?}");
    }
}

#[tokio::test]
async fn long_output_under_the_cap_is_saved_when_the_model_sees_only_part() {
    let env = Env::new();
    let out = env.bash("seq 1 30000").await;
    let spill = out.structured.as_ref().unwrap()["spill_path"].as_str().unwrap().to_string();
    assert_eq!(std::fs::read_to_string(spill).unwrap().lines().count(), 30000);
    let out = env.bash("seq 1 3").await;
    assert_eq!(out.output, "1\n2\n3\n");
    assert!(out.structured.as_ref().unwrap()["spill_path"].is_null());
}

#[tokio::test]
async fn progress_streams_in_throttled_chunks() {
    let env = Env::new();
    let (tx, mut rx) = mpsc::channel(64);
    let call = env.call("bash", json!({"command": "for i in $(seq 1 12); do echo tick $i; sleep 0.1; done"}));
    let out = env.sandbox.run(call, CancellationToken::new(), Some(tx)).await;
    assert!(!out.is_error, "{out:?}");
    let mut chunks = Vec::new();
    while let Ok(c) = rx.try_recv() {
        chunks.push(c);
    }
    assert!(!chunks.is_empty() && chunks.len() < 12, "throttled progress: {chunks:?}");
    assert!(chunks.concat().contains("tick"), "{chunks:?}");
}

#[tokio::test]
async fn the_deadline_kills_the_group() {
    let env = Env::with(|c| c.kill_grace = Duration::from_millis(300));
    let started = Instant::now();
    let out = env.run("bash", json!({"command": "echo started; trap '' TERM; sleep 60", "timeout": 0.5})).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.is_error && out.output.contains("started") && out.output.contains("timed out"), "{out:?}");
    assert_eq!(out.structured.as_ref().unwrap()["timed_out"], true);
}

#[tokio::test]
async fn cancel_kills_the_group_and_keeps_the_output() {
    let env = Env::new();
    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::channel(8);
    let call = env.call("bash", json!({"command": "echo before; sleep 60"}));
    let task = {
        let sandbox = env.sandbox.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { sandbox.run(call, cancel, Some(tx)).await })
    };
    // Cancel once the command has visibly started (its first output arrives as progress).
    let first = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
    assert!(first.is_ok());
    assert!(out.is_error && out.output.contains("before") && out.output.contains("cancelled"), "{out:?}");
}

#[tokio::test]
async fn a_call_dropped_half_way_leaves_nothing_behind() {
    let env = Env::new();
    let (tx, mut rx) = mpsc::channel(8);
    let call = env.call("bash", json!({"command": "setsid sh -c 'echo $$; exec sleep 300' & sleep 300"}));
    let run = env.sandbox.run(call, CancellationToken::new(), Some(tx));
    let pid = tokio::select! {
        _ = run => panic!("the call should not end by itself"),
        first = rx.recv() => first.unwrap().trim().to_string(),
    };
    // The future is dropped here; the cleanup it spawns kills the whole call.
    let pid: i32 = pid.parse().unwrap();
    superpi_tests::wait::until(
        &format!("the grandchild {pid} of a dropped call ends"),
        superpi_tests::wait::PATIENCE,
        async || superpi_tests::is_zombie(pid),
    )
    .await;
}

#[test]
fn a_call_survives_the_thread_that_started_it() {
    // The parent-death signal follows the thread that forked; a call must not die with the
    // thread that happened to start it.
    let env = Env::new();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let (tx, mut rx) = mpsc::channel(8);
    let call = env.call("bash", json!({"command": "echo started; sleep 0.5; echo alive"}));
    let sandbox = env.sandbox.clone();
    let handle = runtime.handle().clone();
    let started = std::thread::spawn(move || {
        let mut run = Box::pin(async move { sandbox.run(call, CancellationToken::new(), Some(tx)).await });
        handle.block_on(async {
            tokio::select! {
                _ = &mut run => panic!("the call ended too early"),
                first = rx.recv() => assert_eq!(first.as_deref(), Some("started\n")),
            }
        });
        run
    });
    let run = started.join().unwrap(); // the starting thread has ended
    let out = runtime.block_on(run);
    assert!(!out.is_error && out.output.contains("alive"), "{out:?}");
}

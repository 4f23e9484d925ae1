//! The store on PostgreSQL, end to end: `superpi kernel` with `SUPERPI_DATABASE_URL` keeps its
//! conversations in the database, so a kernel on another machine (here another data directory)
//! continues them; one killed during a tool call leaves a database the next kernel recovers
//! (the call gets its result, the turn its end, the seqs no gap). Skipped, saying so, without
//! PostgreSQL binaries unless CI is set.

use superpi_proto::method::WatchParams;
use superpi_proto::{ContentBlock, EventBody};
use superpi_tests::{TestEnv, next_event, open_and_watch, postgres_server, turn_events};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_killed_during_a_tool_call_is_recovered_and_continued_by_a_kernel_on_another_machine() {
    let Some(server) = postgres_server::shared() else { return };
    let url = server.new_database();
    let vars = [("SUPERPI_DATABASE_URL", url.as_str())];

    let machine_a = TestEnv::new();
    let (_kernel_a, client) = machine_a.start_kernel(&vars).await;
    let (conv, mut sub) = open_and_watch(&client, &machine_a.workspace, Some("auto"), false).await;
    let first = client.submit_text(conv, "hello").await.unwrap();
    turn_events(&mut sub, first.turn_id).await;
    let turn = client.submit_text(conv, "@tool bash {\"command\": \"sleep 30\"}").await.unwrap();
    let started = next_event(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    let EventBody::ToolStarted { tool_call_id, .. } = started.body else { unreachable!() };
    machine_a.kill_kernel();
    drop((sub, client));
    // Nothing of the conversation is in machine A's data directory.
    assert!(!machine_a.database_path().exists());

    let machine_b = TestEnv::new();
    let (_kernel_b, client) = machine_b.start_kernel(&vars).await;
    let history = client.history(conv).await.unwrap().entries;
    let kinds: Vec<&str> = history.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["user", "assistant", "user", "assistant", "tool_result"]);
    assert!(matches!(
        history.last().unwrap().message.content.as_slice(),
        [ContentBlock::ToolResult { tool_call_id: id, is_error: true, output, .. }]
            if *id == tool_call_id && output.contains("interrupted")
    ));

    // The replay from the start: every seq once, in order, and the killed turn's end.
    let mut replay = client
        .watch(WatchParams {
            conversation_id: conv,
            from_seq: Some(0),
            window: None,
            interactive: false,
            reads_files: false,
        })
        .await
        .unwrap();
    let end = next_event(&mut replay, |e| e.body.is_turn_end() && e.turn_id == Some(turn.turn_id)).await;
    assert!(matches!(&end.body, EventBody::TurnError { error } if error.contains("interrupted")));
    let next = client.submit_text(conv, "still here").await.unwrap();
    let events = turn_events(&mut replay, next.turn_id).await;
    assert!(
        matches!(&events.last().unwrap().body, EventBody::TurnCompleted { result: Some(r), .. } if r == "still here")
    );

    // What kernel B published live follows its head with no gap (deltas included) ...
    let live: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(live.windows(2).all(|w| w[1] == w[0] + 1), "kernel B's seqs have a gap: {live:?}");
    // ... and the stored events of both kernels replay once each, in order.
    let mut check = client
        .watch(WatchParams {
            conversation_id: conv,
            from_seq: Some(0),
            window: None,
            interactive: false,
            reads_files: false,
        })
        .await
        .unwrap();
    let last = *live.last().unwrap();
    let mut stored = vec![next_event(&mut check, |_| true).await.seq];
    while stored.last() != Some(&last) {
        stored.push(next_event(&mut check, |_| true).await.seq);
    }
    assert_eq!(stored[0], 1);
    assert!(stored.windows(2).all(|w| w[1] > w[0]), "replayed seqs out of order: {stored:?}");
}

//! End to end: memory follows use. An idle conversation with no watcher leaves the kernel's
//! memory after a quiet period and comes back from the store with its seqs continuing; one
//! that is watched stays; a watcher that falls behind what the kernel keeps for it catches up
//! from the store and misses no stored event.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::time::Duration;

use superpi_client::KernelClient;
use superpi_proto::method::WatchParams;
use superpi_proto::{Event, EventBody};
use superpi_tests::{TestEnv, open_and_watch, turn_events, wait};

async fn live_conversations(client: &KernelClient) -> u64 {
    client.status().await.unwrap().live_conversations
}

/// Waits (30 s at most) until the kernel holds `count` live conversations.
async fn until_live(client: &KernelClient, count: u64) {
    wait::until(&format!("{count} conversations live"), wait::PATIENCE, async || {
        let live = live_conversations(client).await;
        if live == count { Ok(()) } else { Err(format!("{live} live")) }
    })
    .await;
}

fn watch_from(conversation_id: i64, from_seq: Option<u64>) -> WatchParams {
    WatchParams::live(conversation_id).catch_up(from_seq)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_conversation_leaves_memory_and_comes_back_with_its_seqs_continuing() {
    let env = TestEnv::new();
    let (_kernel, client) = env.start_kernel(&[("SUPERPI_CONVERSATION_IDLE_MS", "300")]).await;

    let (watched, mut watcher) = open_and_watch(&client, &env.workspace, None, false).await;
    let (idle, mut sub) = open_and_watch(&client, &env.workspace, None, false).await;
    let turn = client.submit_text(idle, "before it leaves").await.unwrap();
    let before = turn_events(&mut sub, turn.turn_id).await;
    assert!(matches!(before.last().unwrap().body, EventBody::TurnCompleted { .. }));
    // Its actor, done, says it is idle: the last event it stores.
    let idle_told = tokio::time::timeout(wait::PATIENCE, sub.next()).await.unwrap().unwrap();
    assert!(matches!(&idle_told.body, EventBody::StateChanged { status } if status == "idle"), "{idle_told:?}");
    let head = idle_told.seq;
    drop(sub);

    // The unwatched one leaves; the watched one stays, and its watcher still gets its events
    // (a conversation reloaded under a watcher would leave it waiting for nothing).
    until_live(&client, 1).await;
    let turn = client.submit_text(watched, "still here").await.unwrap();
    let events = turn_events(&mut watcher, turn.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{events:?}");

    // Used again, it is loaded from the store: the head it left with, then seqs without a gap.
    let mut sub = client.watch(watch_from(idle, None)).await.unwrap();
    assert_eq!(sub.head_seq(), head, "reloaded at the head it left with");
    assert_eq!(live_conversations(&client).await, 2);
    let turn = client.submit_text(idle, "after it came back").await.unwrap();
    let after = turn_events(&mut sub, turn.turn_id).await;
    let seqs: Vec<u64> = after.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (head + 1..=head + seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "every event live, seqs continuing without a gap");
    assert!(matches!(after.last().unwrap().body, EventBody::TurnCompleted { .. }));

    // The model saw the whole history: both prompts are in it, in order.
    let history = client.history(idle).await.unwrap();
    let texts: Vec<String> = history.entries.iter().map(|e| e.message.text()).collect();
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert_eq!(texts[0], "before it leaves");
    assert_eq!(texts[2], "after it came back");

    // A replay from the start is every stored event once, in order, across the reload.
    drop(sub);
    drop(watcher);
    until_live(&client, 0).await;
    let mut replay = client.watch(watch_from(idle, Some(0))).await.unwrap();
    let mut replayed = Vec::new();
    while replayed.last().is_none_or(|e: &Event| e.seq < after.last().unwrap().seq) {
        replayed.push(tokio::time::timeout(Duration::from_secs(30), replay.next()).await.unwrap().unwrap());
    }
    let stored: Vec<u64> =
        before.iter().chain([&idle_told]).chain(&after).filter(|e| !e.body.is_transient()).map(|e| e.seq).collect();
    assert_eq!(replayed.iter().map(|e| e.seq).collect::<Vec<_>>(), stored);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_falls_behind_catches_up_from_the_store_and_misses_no_stored_event() {
    let env = TestEnv::new();
    // The kernel keeps at most 256 events a watcher lacks.
    let (_kernel, client) = env.start_kernel(&[("SUPERPI_EVENT_BUFFER", "256")]).await;
    let (conv, mut keeps_up) = open_and_watch(&client, &env.workspace, None, false).await;
    // A window of 8: unread, it stops taking events at 8 and falls behind.
    let mut slow = client.watch(WatchParams::live(conv).window(8)).await.unwrap();
    let first_id = slow.id();

    // Paced (1 ms a delta), so the watcher that reads keeps up on a loaded machine.
    let turn = client.submit_text(conv, "@slow 1\n@deltas 1000").await.unwrap();
    let live = turn_events(&mut keeps_up, turn.turn_id).await;
    let deltas = live.iter().filter(|e| matches!(e.body, EventBody::TextDelta { .. })).count();
    assert_eq!(deltas, 1000, "the watcher that reads keeps up");

    let behind = turn_events(&mut slow, turn.turn_id).await;
    assert_ne!(slow.id(), first_id, "the slow watcher was told it lagged and watched again");
    let stored_live: Vec<u64> = live.iter().filter(|e| !e.body.is_transient()).map(|e| e.seq).collect();
    let stored_behind: Vec<u64> = behind.iter().filter(|e| !e.body.is_transient()).map(|e| e.seq).collect();
    assert_eq!(stored_behind, stored_live, "every stored event, once, in order");
    let seqs: Vec<u64> = behind.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order, none twice");
    let text = |events: &[Event]| {
        events.iter().rev().find_map(|e| match &e.body {
            EventBody::MessageCompleted { content, .. } => Some(format!("{content:?}")),
            _ => None,
        })
    };
    assert_eq!(text(&behind), text(&live), "the answer's whole text, from the store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_soft_limit_idle_conversations_leave_within_a_second() {
    let env = TestEnv::new();
    // A quiet period of ten minutes, and a soft limit of two live conversations.
    let vars = [("SUPERPI_CONVERSATION_IDLE_MS", "600000"), ("SUPERPI_LIVE_SOFT_LIMIT", "2")];
    let (_kernel, client) = env.start_kernel(&vars).await;
    let mut ids = Vec::new();
    for _ in 0..6 {
        let info = client
            .open(superpi_proto::method::OpenParams {
                workspace: Some(env.workspace.display().to_string()),
                ..Default::default()
            })
            .await
            .unwrap();
        ids.push(info.conversation_id);
    }
    // A one-shot flood (a gateway's requests without a session id) does not wait out the
    // quiet period: the kernel comes back to its soft limit.
    wait::until("the kernel back to 2 live conversations", wait::PATIENCE, async || {
        let live = live_conversations(&client).await;
        if live <= 2 { Ok(()) } else { Err(format!("{live} live")) }
    })
    .await;
    // Each of them still answers, from the store.
    for id in ids {
        let history = client.history(id).await.unwrap();
        assert_eq!(history.conversation.conversation_id, id);
    }
}

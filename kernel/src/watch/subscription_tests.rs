use std::time::Duration;

use superpi_proto::Event;
use superpi_store::{Commit, LiveBatch, NewConversation, SqliteStore};
use tokio::sync::{broadcast, watch};

use super::*;
use crate::watch::cluster_heads::Heard;

/// Commits a stored event at `seq`, as the kernel that runs the conversation does.
fn commit(store: &dyn Store, conversation_id: i64, seq: u64) {
    let mut event = Event::notice(conversation_id, None, "info", format!("event {seq}"));
    event.seq = seq;
    let wire = event.to_json();
    let commit = Commit {
        conversation_id,
        seq,
        event_type: event.type_name(),
        wire: &wire,
        entry: None,
        turn_status: None,
        lease: None,
        live: &[],
    };
    store.commit(&commit).unwrap();
}

fn delta(conversation_id: i64, seq: u64) -> (u64, String) {
    let mut event = Event::text_delta(conversation_id, None, 0, format!("word {seq} "));
    event.seq = seq;
    (seq, event.to_json())
}

/// The seqs of the events the watcher is sent, until it was sent `last`.
async fn sent_until(
    frames: &mut tokio::sync::mpsc::UnboundedReceiver<crate::watch::outbox::Queued>,
    last: u64,
) -> Vec<u64> {
    let mut seqs = Vec::new();
    while !seqs.contains(&last) {
        let queued = tokio::time::timeout(Duration::from_secs(60), frames.recv()).await;
        let frame: serde_json::Value = serde_json::from_slice(&queued.unwrap().unwrap().frame).unwrap();
        seqs.extend(frame["events"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()));
    }
    seqs
}

/// A watcher of a conversation another kernel runs polls the store for notices it may have
/// lost. When the holder told deltas (seqs 2 and 3) and then committed an event (4), and the
/// poll comes before the deltas' notice is heard here, the poll must not send event 4: the
/// deltas heard right after would be older than what was sent, and dropped (the answer's text
/// lost). A poll reads only up to the head the poll before it found, so a lost notice still
/// delays an event by two polls at most.
#[tokio::test(start_paused = true)]
async fn a_poll_of_the_store_never_overtakes_deltas_on_their_way() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().unwrap());
    let conv = store.create_conversation(&NewConversation { owner: "local".into(), ..Default::default() }).unwrap().id;
    commit(&*store, conv, 1);
    let (heard_commit, committed) = watch::channel(1);
    let (heard_deltas, live) = broadcast::channel(16);
    let (out, mut frames) = Outbox::new(1 << 20, 1 << 20);
    let spec = WatchSpec {
        id: 1,
        from_seq: None,
        window: DEFAULT_WINDOW,
        interactive: false,
        reads_files: false,
        opens_urls: false,
    };
    let (forwarder, _handle) = Forwarder::new(store.clone(), CancellationToken::new(), conv, spec, out);
    let task = tokio::spawn(forwarder.run_stored(Heard { committed, live }, 1));

    // Deltas 2 and 3 told, event 4 committed; a poll comes before either notice is heard.
    commit(&*store, conv, 4);
    tokio::time::sleep(STORED_POLL + STORED_POLL / 2).await;
    heard_deltas
        .send(Arc::new(LiveBatch { conversation_id: conv, events: vec![delta(conv, 2), delta(conv, 3)] }))
        .unwrap();
    heard_commit.send_replace(4);
    assert_eq!(sent_until(&mut frames, 4).await, [2, 3, 4]);

    // A notice lost: the polls bring the event.
    commit(&*store, conv, 5);
    let lost_at = tokio::time::Instant::now();
    assert_eq!(sent_until(&mut frames, 5).await, [5]);
    assert!(lost_at.elapsed() <= STORED_POLL * 3, "{:?}", lost_at.elapsed());
    task.abort();
}

//! End to end: a store of many conversations (2,000 copies of one a real turn made, written
//! straight into the store by superpi_tests::bulk; the million of src/bin/store_bench.rs is a
//! benchmark, not a test) lists every one of them once, latest first, over pages (and through
//! `superpi session list --limit N / --all`); an old one
//! opens with its history, takes a new turn and comes first; deleting one leaves the others.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use superpi_proto::method::{ListParams, ListResult, Method};
use superpi_proto::{EntryKind, EventBody};
use superpi_tests::bulk::copy_conversation;
use superpi_tests::{TestEnv, first_turn_end, turn_events, watch};

const COPIES: u64 = 2_000;

async fn page(client: &superpi_client::KernelClient, limit: u32, offset: u32) -> ListResult {
    let params = ListParams { limit: Some(limit), offset: Some(offset), cursor: None };
    client.request(Method::SessionList(params)).await.expect("session.list")
}

/// Every conversation, page after page until one says no more follow.
async fn every_page(client: &superpi_client::KernelClient, limit: u32) -> Vec<i64> {
    let mut ids = Vec::new();
    loop {
        let page = page(client, limit, ids.len() as u32).await;
        ids.extend(page.conversations.iter().map(|c| c.conversation_id));
        if !page.more {
            return ids;
        }
        assert!(!page.conversations.is_empty(), "a page says more follow and holds none");
    }
}

/// Every conversation, following each page's `next` (no offsets).
async fn every_page_by_cursor(client: &superpi_client::KernelClient, limit: u32) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let params = ListParams { limit: Some(limit), offset: None, cursor: cursor.take() };
        let page = client.list_page(params).await.expect("session.list");
        ids.extend(page.conversations.iter().map(|c| c.conversation_id));
        assert_eq!(page.more, page.next.is_some(), "`next` is there exactly when more follow");
        match page.next {
            Some(next) => cursor = Some(next),
            None => return ids,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_stored_conversations_list_in_order_over_pages_and_an_old_one_takes_a_turn() {
    let env = TestEnv::new();
    let (mut kernel, client) = env.start_kernel(&[]).await;
    let (ok, err) = env.run_to_exit(&["run", "hello"], &[]);
    assert!(ok, "the first turn: {err}");
    client.shutdown().await.expect("shutdown");
    kernel.wait().expect("the kernel exits");
    let template = copy_conversation(&env.database_path(), COPIES, 300).expect("copies");

    let (_kernel, client) = env.start_kernel(&[]).await;
    // Latest first: the conversation the turn made, then its copies from the newest (the
    // highest id) down to the oldest.
    let expected: Vec<i64> =
        std::iter::once(template.conversation).chain((1..=COPIES).rev().map(|k| template.copy(k))).collect();
    assert_eq!(every_page(&client, 1000).await, expected, "pages of 1,000");
    assert_eq!(every_page(&client, 77).await, expected, "pages of 77");
    assert_eq!(every_page_by_cursor(&client, 77).await, expected, "pages of 77 by cursor");
    for (cursor, offset) in [("not-a-position", None), ("1.2", Some(5))] {
        let params = ListParams { limit: None, offset, cursor: Some(cursor.into()) };
        match client.list_page(params).await {
            Err(superpi_client::ClientError::Kernel(err)) => assert_eq!(err.code, -32602, "{err:?}"),
            other => panic!("cursor {cursor:?} offset {offset:?}: {other:?}"),
        }
    }

    // The CLI shows the latest 100, or N, or every one over pages by cursor.
    let listed = |args: &[&str]| {
        let out = env.command(&[&["session", "list", "--json"], args].concat()).output().expect("superpi");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let listed: Vec<superpi_proto::method::ConversationInfo> = serde_json::from_slice(&out.stdout).unwrap();
        listed.iter().map(|c| c.conversation_id).collect::<Vec<_>>()
    };
    assert_eq!(listed(&[]), expected[..100]);
    assert_eq!(listed(&["--limit", "1234"]), expected[..1234]);
    assert_eq!(listed(&["--all"]), expected);
    let text = env.command(&["session", "list"]).output().expect("superpi");
    assert_eq!(String::from_utf8_lossy(&text.stdout).lines().count(), 101, "a header and 100 rows");
    assert!(String::from_utf8_lossy(&text.stderr).contains("--all"), "it says more are left");

    // The oldest opens with the history the first turn stored, under its own id.
    let oldest = template.copy(1);
    let first = client.history(template.conversation).await.expect("history");
    let old = client.history(oldest).await.expect("history of the oldest");
    assert_eq!(old.conversation.conversation_id, oldest);
    let messages = |h: &superpi_proto::method::HistoryResult| {
        h.entries.iter().map(|e| (e.kind, serde_json::to_value(&e.message).unwrap())).collect::<Vec<_>>()
    };
    assert_eq!(messages(&old), messages(&first));
    assert!(old.entries.iter().any(|e| e.kind == EntryKind::Assistant), "{:?}", old.entries);
    assert!(matches!(first_turn_end(&client, oldest).await, EventBody::TurnCompleted { .. }));

    // A new turn in it goes on from its stored head and brings it to the top of the list.
    let mut sub = watch(&client, oldest, None).await;
    let head = sub.head_seq();
    let turn = client.submit_text(oldest, "go on").await.expect("submit");
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{events:?}");
    assert_eq!(events.first().unwrap().seq, head + 1, "seqs go on from the stored head");
    let top = page(&client, 2, 0).await;
    let top: Vec<i64> = top.conversations.iter().map(|c| c.conversation_id).collect();
    assert_eq!(top, [oldest, template.conversation]);

    // Deleting an old one leaves every other, in order.
    let gone = template.copy(2);
    client.delete(gone).await.expect("delete");
    let mut left: Vec<i64> = expected.iter().copied().filter(|&id| id != oldest && id != gone).collect();
    left.insert(0, oldest);
    assert_eq!(every_page(&client, 1000).await, left);
    assert_eq!(every_page_by_cursor(&client, 1000).await, left);
}

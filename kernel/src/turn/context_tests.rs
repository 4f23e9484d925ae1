use serde_json::json;
use superpi_proto::{ContentBlock, Usage};

use super::*;
use superpi_store::{Commit, NewConversation, SqliteStore};

fn store_with(entries: &[(EntryKind, Message)], compaction_head: Option<u64>) -> (SqliteStore, i64) {
    let store = SqliteStore::open_in_memory().unwrap();
    let conv = store.create_conversation(&NewConversation { owner: "local".into(), ..Default::default() }).unwrap();
    for (i, (kind, message)) in entries.iter().enumerate() {
        let seq = i as u64 + 1;
        let event = if *kind == EntryKind::Compaction {
            Event::compaction_completed(conv.id, None, head_entry_id(compaction_head), Some("s".into()))
        } else {
            Event::message_completed(conv.id, None, message.role, message.content.clone(), None)
        };
        let wire = event.to_json();
        let commit = Commit {
            conversation_id: conv.id,
            seq,
            event_type: event.type_name(),
            wire: &wire,
            entry: Some((*kind, None, message)),
            turn_status: None,
            lease: None,
            live: &[],
        };
        store.commit(&commit).unwrap();
    }
    (store, conv.id)
}

fn msg(role: Role, content: Vec<ContentBlock>) -> Message {
    Message { role, content, usage: None, stop_reason: None }
}

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolCall { id: id.into(), name: "ls".into(), arguments: json!({}) }
}

fn result(id: &str) -> ContentBlock {
    ContentBlock::tool_result(id, "ls", "a b")
}

#[test]
fn the_last_compaction_slices_the_context_keeping_its_recent_entries() {
    let entries = vec![
        (EntryKind::User, Message::user_text("old")),                   // 1
        (EntryKind::Assistant, msg(Role::Assistant, vec![call("c1")])), // 2
        (EntryKind::ToolResult, msg(Role::Tool, vec![result("c1")])),   // 3
        (EntryKind::User, Message::user_text("recent")),                // 4
        (EntryKind::Assistant, msg(Role::Assistant, vec![ContentBlock::text("ok")])), // 5
        (EntryKind::Compaction, summary_message("they said old", None)), // 6, keeps 4 on
        (EntryKind::User, Message::user_text("new")),                   // 7
    ];
    let (store, id) = store_with(&entries, Some(4));
    let ctx = derive(&store, id).unwrap();
    assert_eq!(ctx.compaction_seq, Some(6));
    assert_eq!(ctx.entries.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![4, 5, 7]);
    let texts: Vec<String> = ctx.messages().iter().map(Message::text).collect();
    assert!(texts[0].starts_with(SUMMARY_PREAMBLE) && texts[0].ends_with("they said old"));
    assert_eq!(texts[1..], ["recent", "ok", "new"]);

    // A compaction that kept nothing before itself: the summary, then what came after.
    let (store, id) = store_with(&entries, None);
    let ctx = derive(&store, id).unwrap();
    assert_eq!(ctx.entries.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![7]);
    // The store keeps everything.
    assert_eq!(store.entries(id).unwrap().len(), 7);
}

#[test]
fn size_is_the_last_counted_answer_and_an_estimate_of_what_followed() {
    let mut answer = msg(Role::Assistant, vec![ContentBlock::text("ok")]);
    answer.usage = Some(Usage { input_tokens: 1_000, output_tokens: 30, ..Default::default() });
    let entries = vec![
        (EntryKind::User, Message::user_text("hello")),
        (EntryKind::Assistant, answer),
        (EntryKind::User, Message::user_text("x".repeat(300))),
    ];
    let (store, id) = store_with(&entries, None);
    let ctx = derive(&store, id).unwrap();
    assert_eq!(ctx.tokens(None, &[]), 1_000 + 30 + tokens::message(&Message::user_text("x".repeat(300))));

    // Before any counted answer (or after a compaction) the whole request is estimated.
    let (store, id) = store_with(&entries[..1], None);
    let ctx = derive(&store, id).unwrap();
    let whole =
        tokens::request(&ModelRequest { system: Some("sys".into()), messages: ctx.messages(), ..Default::default() });
    assert_eq!(ctx.tokens(Some("sys"), &[]), whole);
}

#[test]
fn cuts_fall_where_no_call_waits_for_its_result() {
    let entries = vec![
        (EntryKind::User, Message::user_text("a")),
        (EntryKind::Assistant, msg(Role::Assistant, vec![call("c1")])),
        (EntryKind::ToolResult, msg(Role::Tool, vec![result("c1")])),
        (EntryKind::Assistant, msg(Role::Assistant, vec![ContentBlock::text("done")])),
        (EntryKind::User, Message::user_text("b")),
    ];
    let (store, id) = store_with(&entries, None);
    let ctx = derive(&store, id).unwrap();
    assert_eq!(cut_points(&ctx.entries), vec![1, 3, 4]);
}

#[test]
fn limits_leave_room_for_the_answer() {
    let limits = ModelLimits { context_window: 10_000, max_output_tokens: 8_000 };
    assert_eq!(output_reserve(limits), 2_500);
    assert_eq!(request_limit(limits), 7_500);
    assert_eq!(compact_threshold(limits, 80), 7_500);
    assert_eq!(compact_threshold(limits, 50), 5_000);
}

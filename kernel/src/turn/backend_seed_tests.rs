use serde_json::json;
use superpi_proto::{Message, Role};

use super::*;

fn entry(seq: u64, kind: EntryKind, turn_id: i64, content: Vec<ContentBlock>) -> Entry {
    let role = match kind {
        EntryKind::Assistant => Role::Assistant,
        EntryKind::ToolResult => Role::Tool,
        _ => Role::User,
    };
    let message = Message { role, content, usage: None, stop_reason: None };
    Entry { seq, kind, turn_id: Some(turn_id), message, created_at_ms: 0 }
}

/// Turn 1 (a call and its result, an answer), then turn 2's prompt.
fn history() -> Vec<Entry> {
    vec![
        entry(1, EntryKind::User, 1, vec![ContentBlock::text("the colour is blue")]),
        entry(
            3,
            EntryKind::Assistant,
            1,
            vec![ContentBlock::ToolCall { id: "c1".into(), name: "Bash".into(), arguments: json!({"command": "ls"}) }],
        ),
        entry(
            5,
            EntryKind::ToolResult,
            1,
            vec![ContentBlock::ToolResult {
                tool_call_id: "c1".into(),
                name: "Bash".into(),
                output: "notes.txt".into(),
                is_error: false,
                structured: None,
                details: None,
            }],
        ),
        entry(7, EntryKind::Assistant, 1, vec![ContentBlock::text("noted")]),
        entry(9, EntryKind::User, 2, vec![ContentBlock::text("what colour?")]),
    ]
}

fn kept(id: &str, through_seq: Option<u64>) -> Option<SessionRecord> {
    Some(SessionRecord { id: id.into(), through_seq })
}

#[test]
fn a_session_that_saw_everything_before_the_turn_is_resumed() {
    assert_eq!(start(kept("s-1", Some(7)), &history(), 2), Start::Resume("s-1".into()));
    // An id an older kernel stored alone is trusted.
    assert_eq!(start(kept("s-0", None), &history(), 2), Start::Resume("s-0".into()));
}

#[test]
fn no_session_here_or_one_that_missed_turns_starts_a_new_one_seeded_with_the_history() {
    for (kept, missing) in [(None, "no session"), (kept("s-1", Some(3)), "missed")] {
        let Start::Seeded { history, why } = start(kept, &history(), 2) else { panic!("seeded") };
        assert!(why.contains(missing), "{why}");
        assert_eq!(
            history,
            "User: the colour is blue\nAssistant called Bash: {\"command\":\"ls\"}\nBash returned: notes.txt\nAssistant: noted"
        );
        // This turn's own prompt is not history.
        assert!(!history.contains("what colour?"));
    }
    // The first turn has nothing before it.
    assert_eq!(start(None, &history()[..1], 1), Start::Fresh);
}

#[test]
fn the_history_follows_the_compaction_rules_and_keeps_the_latest_when_long() {
    let mut entries = history();
    let summary = entry(8, EntryKind::Compaction, 1, vec![ContentBlock::text("they talked about colours")]);
    entries.insert(4, summary);
    let Start::Seeded { history, .. } = start(None, &entries, 2) else { panic!("seeded") };
    assert_eq!(history, "Summary of what came before: they talked about colours");
    // A clear leaves nothing: a fresh session.
    entries[4] = entry(8, EntryKind::Compaction, 1, vec![]);
    assert_eq!(start(kept("s-1", Some(7)), &entries, 2), Start::Fresh);
    // Long: the latest part, saying that the rest was left out.
    let long: Vec<Entry> = (0..200)
        .map(|i| entry(i + 1, EntryKind::User, 1, vec![ContentBlock::text(format!("{i} {}", "x".repeat(1000)))]))
        .collect();
    let Start::Seeded { history, .. } = start(None, &long, 2) else { panic!("seeded") };
    assert!(history.len() <= MOST_HISTORY + 100 && history.starts_with("[earlier history left out]"));
    assert!(history.ends_with(&format!("199 {}", "x".repeat(1000))));
    assert!(seeded_prompt("H", "P").ends_with("follows.]\n\nP"));
}

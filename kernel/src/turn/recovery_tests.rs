use super::*;
use serde_json::json;

fn entry(seq: u64, kind: EntryKind, turn_id: Option<i64>, role: Role, content: Vec<ContentBlock>) -> Entry {
    Entry { seq, kind, turn_id, message: Message { role, content, usage: None, stop_reason: None }, created_at_ms: 0 }
}

fn call(id: &str, name: &str) -> ContentBlock {
    ContentBlock::ToolCall { id: id.into(), name: name.into(), arguments: json!({}) }
}

fn result(id: &str, name: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_call_id: id.into(),
        name: name.into(),
        output: "ok".into(),
        is_error: false,
        structured: None,
        details: None,
    }
}

#[test]
fn calls_without_a_result_are_open_in_the_order_the_model_made_them() {
    let entries = vec![
        entry(1, EntryKind::User, Some(7), Role::User, vec![ContentBlock::text("go")]),
        entry(2, EntryKind::Assistant, Some(7), Role::Assistant, vec![call("a", "ls"), call("b", "bash")]),
        entry(3, EntryKind::ToolResult, Some(7), Role::Tool, vec![result("a", "ls")]),
        entry(4, EntryKind::Assistant, Some(7), Role::Assistant, vec![ContentBlock::text("and"), call("c", "read")]),
    ];
    assert_eq!(
        open_calls(&entries, Scope::Turn(7)),
        [("b".to_string(), "bash".to_string()), ("c".into(), "read".into())]
    );
}

#[test]
fn only_the_turns_own_calls_are_closed() {
    // An earlier turn's hole (left by a kernel before this fix) is not patched at the end of
    // a later turn: a result appended there would not follow its call.
    let entries = vec![
        entry(1, EntryKind::Assistant, Some(1), Role::Assistant, vec![call("old", "bash")]),
        entry(2, EntryKind::User, Some(2), Role::User, vec![ContentBlock::text("next")]),
        entry(3, EntryKind::Assistant, Some(2), Role::Assistant, vec![ContentBlock::text("done")]),
    ];
    assert!(open_calls(&entries, Scope::Turn(2)).is_empty());
    assert_eq!(open_calls(&entries, Scope::Turn(1)).len(), 1);
}

#[test]
fn a_turn_whose_calls_all_have_results_has_none_open() {
    let entries = vec![
        entry(1, EntryKind::Assistant, Some(3), Role::Assistant, vec![call("x", "ls")]),
        entry(2, EntryKind::ToolResult, Some(3), Role::Tool, vec![result("x", "ls")]),
    ];
    assert!(open_calls(&entries, Scope::Turn(3)).is_empty());
}

#[test]
fn each_way_a_turn_ends_early_says_why_in_the_result() {
    assert!(OpenCallEnd::Interrupted.output().starts_with("interrupted:"));
    assert!(OpenCallEnd::Cancelled.output().starts_with("cancelled"));
    assert!(OpenCallEnd::Interrupted.output().contains("may have run"));
    assert!(OpenCallEnd::Unanswered.output().starts_with("not run:"));
    assert!(OpenCallEnd::Failed.output().starts_with("not run:"));
    assert!(OpenCallEnd::Forked.output().starts_with("not run:"));
}

#[test]
fn a_forks_open_calls_are_those_after_the_last_user_message() {
    // Fork entries carry no turn. The old hole before the last prompt is not patched.
    let entries = vec![
        entry(1, EntryKind::Assistant, None, Role::Assistant, vec![call("old", "bash")]),
        entry(2, EntryKind::User, None, Role::User, vec![ContentBlock::text("go")]),
        entry(3, EntryKind::Assistant, None, Role::Assistant, vec![call("a", "ls"), call("b", "read")]),
        entry(4, EntryKind::ToolResult, None, Role::Tool, vec![result("a", "ls")]),
    ];
    assert_eq!(open_calls(&entries, Scope::Tail), [("b".to_string(), "read".to_string())]);
}

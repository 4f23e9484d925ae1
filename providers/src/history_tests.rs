#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::json;

use super::*;

fn call(id: &str, name: &str) -> ContentBlock {
    ContentBlock::ToolCall { id: id.into(), name: name.into(), arguments: json!({}) }
}

fn result(id: &str, name: &str, output: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_call_id: id.into(),
        name: name.into(),
        output: output.into(),
        is_error: false,
        structured: None,
        details: None,
    }
}

fn interrupted(id: &str, name: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_call_id: id.into(),
        name: name.into(),
        output: INTERRUPTED.into(),
        is_error: true,
        structured: None,
        details: None,
    }
}

fn msg(role: Role, content: Vec<ContentBlock>) -> Message {
    message(role, content)
}

#[test]
fn a_call_without_a_result_gets_the_interrupted_result_before_the_next_user_text() {
    let history = vec![
        Message::user_text("run it"),
        msg(Role::Assistant, vec![ContentBlock::text("Running."), call("c1", "bash"), call("c2", "ls")]),
        msg(Role::Tool, vec![result("c2", "ls", "a.txt")]),
        Message::user_text("are you there?"),
    ];
    assert_eq!(
        paired(&history).messages,
        vec![
            Message::user_text("run it"),
            msg(Role::Assistant, vec![ContentBlock::text("Running."), call("c1", "bash"), call("c2", "ls")]),
            msg(Role::Tool, vec![interrupted("c1", "bash"), result("c2", "ls", "a.txt")]),
            Message::user_text("are you there?"),
        ]
    );
    // The history ends with the call (the kernel died while it ran).
    let cut = paired(&history[..2]).messages;
    assert_eq!(cut[2], msg(Role::Tool, vec![interrupted("c1", "bash"), interrupted("c2", "ls")]));
}

#[test]
fn a_result_without_its_call_becomes_text_and_late_results_go_first() {
    let history = vec![
        Message::user_text("hi"),
        msg(Role::Tool, vec![result("gone", "read", "old output")]),
        msg(Role::Assistant, vec![call("c1", "ls")]),
        Message::user_text("meanwhile"),
        msg(Role::Tool, vec![result("c1", "", "listing"), result("c1", "ls", "twice")]),
    ];
    assert_eq!(
        paired(&history).messages,
        vec![
            Message::user_text("hi"),
            msg(Role::User, vec![ContentBlock::text("[result of an earlier call gone of read]\nold output")]),
            msg(Role::Assistant, vec![call("c1", "ls")]),
            // The empty result name is the call's; the second result for c1 is an orphan.
            msg(Role::Tool, vec![result("c1", "ls", "listing")]),
            msg(
                Role::User,
                vec![
                    ContentBlock::text("meanwhile"),
                    ContentBlock::text("[result of an earlier call c1 of ls]\ntwice")
                ]
            ),
        ]
    );
}

#[test]
fn repeated_ids_blank_text_and_system_messages() {
    let history = vec![
        msg(Role::System, vec![ContentBlock::text("be brief")]),
        msg(Role::User, vec![ContentBlock::text("  "), ContentBlock::text("go")]),
        msg(Role::Assistant, vec![call("call_1", "ls")]),
        msg(Role::Tool, vec![result("call_1", "ls", "one")]),
        msg(Role::Assistant, vec![ContentBlock::text(""), call("call_1", "ls")]),
        msg(Role::Tool, vec![result("call_1", "ls", "two")]),
        msg(Role::Assistant, vec![ContentBlock::text(" \n")]),
        msg(Role::User, vec![]),
    ];
    let out = paired(&history);
    assert_eq!(out.system, vec!["be brief".to_string()]);
    assert_eq!(
        out.messages,
        vec![
            Message::user_text("go"),
            msg(Role::Assistant, vec![call("call_1", "ls")]),
            msg(Role::Tool, vec![result("call_1", "ls", "one")]),
            msg(Role::Assistant, vec![call("call_1_2", "ls")]),
            msg(Role::Tool, vec![result("call_1_2", "ls", "two")]),
        ]
    );
}

#[test]
fn alternating_merges_sides_and_opens_with_the_user() {
    let turns =
        alternating(vec![(true, vec![1]), (true, vec![2]), (false, vec![]), (false, vec![3]), (false, vec![4])], 0);
    assert_eq!(turns, vec![(false, vec![0]), (true, vec![1, 2]), (false, vec![3, 4])]);
    assert_eq!(alternating(Vec::<(bool, Vec<u8>)>::new(), 9), vec![(false, vec![9])]);
}

#[test]
fn cuts_never_separate_a_call_from_its_result() {
    let history = vec![
        message(Role::User, vec![ContentBlock::text("go")]), // 0
        message(Role::Assistant, vec![call("a", "read"), call("b", "ls")]), // 1
        message(Role::Tool, vec![result("a", "read", "x")]), // 2
        message(Role::Tool, vec![result("b", "ls", "y")]),   // 3
        message(Role::Assistant, vec![ContentBlock::text("done")]), // 4
        message(Role::User, vec![ContentBlock::text("again")]), // 5
        message(Role::Assistant, vec![call("a", "read")]),   // 6: an id used before
        message(Role::User, vec![ContentBlock::text("meanwhile")]), // 7: typed before the result
        message(Role::Tool, vec![result("a", "read", "z")]), // 8
        message(Role::Assistant, vec![call("lost", "bash")]), // 9: its result was never stored
        message(Role::User, vec![ContentBlock::text("next")]), // 10
    ];
    assert_eq!(closed_prefixes(&history), vec![0, 1, 4, 5, 6, 9, 10]);
    // Every cut leaves both sides sendable without a synthetic or orphaned result.
    for cut in closed_prefixes(&history) {
        let kept = paired(&history[cut..]);
        let orphaned = kept
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .any(|b| matches!(b, ContentBlock::Text { text } if text.starts_with("[result of an earlier call")));
        assert!(!orphaned, "cut at {cut} orphaned a result");
    }
}

#[test]
fn an_image_a_tool_returned_follows_the_results_in_a_user_message_named_by_its_call() {
    let png = ContentBlock::image("image/png", "iVBORw0KGgo=");
    let history = vec![
        Message::user_text("look at the chart"),
        msg(Role::Assistant, vec![call("c1", "read")]),
        msg(Role::Tool, vec![result("c1", "read", "chart.png: an image"), png.clone()]),
    ];
    assert_eq!(
        paired(&history).messages,
        vec![
            Message::user_text("look at the chart"),
            msg(Role::Assistant, vec![call("c1", "read")]),
            msg(Role::Tool, vec![result("c1", "read", "chart.png: an image")]),
            msg(Role::User, vec![ContentBlock::text("[the image that read call c1 returned]"), png]),
        ]
    );
    // Without its bytes (gone from the store) it is a line saying so.
    let gone = ContentBlock::Image { media_type: "image/png".into(), data: None, sha256: Some("00".into()) };
    let history = vec![history[0].clone(), history[1].clone(), msg(Role::Tool, vec![result("c1", "read", "x"), gone])];
    let messages = paired(&history).messages;
    assert_eq!(
        messages[3],
        msg(Role::User, vec![ContentBlock::text("[an image (image/png) that is no longer stored]")])
    );
}

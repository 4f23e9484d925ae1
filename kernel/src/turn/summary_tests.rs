use serde_json::json;
use superpi_providers::ModelLimits;

use super::*;

fn msg(role: Role, content: Vec<ContentBlock>) -> Message {
    Message { role, content, usage: None, stop_reason: None }
}

/// `turns` turns of a prompt of `bytes` bytes, a tool call, its result and an answer.
fn history(turns: usize, bytes: usize) -> Vec<Message> {
    (0..turns)
        .flat_map(|t| {
            let id = format!("c{t}");
            [
                Message::user_text(format!("{t}: {}", "x".repeat(bytes))),
                msg(
                    Role::Assistant,
                    vec![ContentBlock::ToolCall { id: id.clone(), name: "ls".into(), arguments: json!({}) }],
                ),
                msg(
                    Role::Tool,
                    vec![ContentBlock::ToolResult {
                        tool_call_id: id,
                        name: "ls".into(),
                        output: "a b c".into(),
                        is_error: false,
                        structured: None,
                        details: None,
                    }],
                ),
                msg(Role::Assistant, vec![ContentBlock::text("done")]),
            ]
        })
        .collect()
}

fn frame(limits: ModelLimits) -> Frame<'static> {
    Frame { model: "mock", effort: None, system: Some("sys"), tools: &[], limits }
}

#[test]
fn a_history_five_windows_long_is_summarised_in_pieces_that_each_fit_and_leave_nothing_out() {
    let limits = ModelLimits { context_window: 2_000, max_output_tokens: 200 };
    let frame = frame(limits);
    let messages = history(40, 700);
    assert!(messages.iter().map(tokens::message).sum::<u64>() > 5 * limits.context_window);
    let previous = context::summary_message("what came before", None);
    let pieces = plan(Some(&previous), &messages, &frame);
    assert!(pieces.len() > 1 && pieces.len() <= MAX_PIECES, "{pieces:?}");
    // In order, end to end, each at a turn's boundary (a call never apart from its result).
    assert_eq!(pieces.first().map(|p| p.start), Some(0));
    assert_eq!(pieces.last().map(|p| p.end), Some(messages.len()));
    assert!(pieces.windows(2).all(|w| w[0].end == w[1].start));
    assert!(pieces.iter().all(|p| messages[p.start].role == Role::User), "{pieces:?}");
    // Each request fits beside the summary before it (at most an answer long), unclipped.
    let answer = context::summary_message(&"s".repeat(600), None);
    for (at, piece) in pieces.iter().enumerate() {
        let running = if at == 0 { &previous } else { &answer };
        let request = piece_request(Some(running), &messages[piece.clone()], &frame);
        assert!(tokens::request(&request) <= context::request_limit(limits), "piece {at}");
        assert!(!request.messages.iter().any(|m| m.text().contains("left out to fit")), "piece {at} was clipped");
        assert_eq!(request.messages.last().map(Message::text).as_deref(), Some(SUMMARY_PROMPT));
        assert_eq!(request.max_tokens, Some(200));
    }
}

#[test]
fn past_the_most_pieces_the_oldest_are_left_out() {
    let limits = ModelLimits { context_window: 1_000, max_output_tokens: 100 };
    let messages = history(200, 700);
    let pieces = plan(None, &messages, &frame(limits));
    assert_eq!(pieces.len(), MAX_PIECES);
    assert_eq!(pieces.last().map(|p| p.end), Some(messages.len()));
    assert!(pieces[0].start > 0);
}

#[test]
fn a_part_that_does_not_fit_alone_goes_clipped_head_and_tail_kept() {
    let limits = ModelLimits { context_window: 2_000, max_output_tokens: 200 };
    let frame = frame(limits);
    let huge = format!("HEAD{}TAIL", "é".repeat(20_000));
    let messages = vec![
        Message::user_text("read it"),
        msg(
            Role::Assistant,
            vec![ContentBlock::ToolCall {
                id: "c".into(),
                name: "write".into(),
                arguments: json!({"path": "a", "content": huge}),
            }],
        ),
        msg(
            Role::Tool,
            vec![ContentBlock::ToolResult {
                tool_call_id: "c".into(),
                name: "write".into(),
                output: huge.clone(),
                is_error: false,
                structured: None,
                details: None,
            }],
        ),
        msg(Role::Assistant, vec![ContentBlock::text("written")]),
    ];
    let pieces = plan(None, &messages, &frame);
    for piece in &pieces {
        let request = piece_request(None, &messages[piece.clone()], &frame);
        assert!(tokens::request(&request) <= context::request_limit(limits), "{piece:?}");
    }
    let request = piece_request(None, &messages, &frame);
    let text = serde_json::to_string(&request.messages).unwrap();
    assert!(text.contains("HEAD") && text.contains("TAIL") && text.contains("left out to fit"));
    // The call keeps its arguments an object, its path whole.
    let call = request.messages[1].content[0].clone();
    assert!(matches!(call, ContentBlock::ToolCall { arguments, .. } if arguments["path"] == "a"));
}

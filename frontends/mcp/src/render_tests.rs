use super::*;
use serde_json::json;
use superpi_proto::Usage;

fn ev(turn: Option<i64>, body: EventBody) -> Event {
    Event::new(7, turn, body)
}

fn assistant(blocks: Vec<KernelBlock>) -> EventBody {
    EventBody::MessageCompleted { role: Role::Assistant, content: blocks, usage: Some(Usage::default()) }
}

fn progress(progress: f64, message: &str) -> TaskOut {
    TaskOut::Progress { progress, message: message.to_string() }
}

#[test]
fn a_turn_with_a_tool_call_renders_progress_then_the_answer() {
    let mut r = TaskRenderer::new("superpi-code", 7);
    r.follow_turn(3);
    let events = vec![
        ev(
            Some(3),
            EventBody::MessageCompleted { role: Role::User, content: vec![KernelBlock::text("@tool ls")], usage: None },
        ),
        ev(Some(3), EventBody::TurnStarted {}),
        ev(Some(3), EventBody::TextDelta { index: 0, delta: "ignored".into() }),
        ev(
            Some(3),
            assistant(vec![KernelBlock::ToolCall {
                id: "c1".into(),
                name: "ls".into(),
                arguments: json!({"path": "."}),
            }]),
        ),
        ev(
            Some(3),
            EventBody::ToolStarted {
                tool_call_id: "c1".into(),
                name: "ls".into(),
                arguments: json!({"path": "."}),
                overwritten_keys: vec![],
            },
        ),
        ev(
            Some(3),
            EventBody::ToolCompleted {
                tool_call_id: "c1".into(),
                name: "ls".into(),
                is_error: false,
                output: json!("a.txt"),
                structured: None,
                details: None,
            },
        ),
        ev(Some(3), assistant(vec![KernelBlock::text("The workspace holds a.txt.")])),
        ev(Some(3), EventBody::TurnCompleted { stop_reason: "end_turn".into(), result: None }),
        ev(Some(3), EventBody::Notice { level: "info".into(), message: "after the end".into() }),
    ];
    let out: Vec<TaskOut> = events.iter().flat_map(|e| r.render(e)).collect();
    assert_eq!(
        out,
        vec![
            progress(1.0, "turn started"),
            progress(2.0, "model answered with 1 tool call(s)"),
            progress(3.0, "running ls"),
            progress(4.0, "ls done"),
            progress(5.0, "model answered"),
            TaskOut::Finished(TaskOutcome {
                status: TaskStatus::Completed { stop_reason: "end_turn".into() },
                harness: "superpi-code".into(),
                conversation_id: 7,
                turn_id: Some(3),
                text: "The workspace holds a.txt.".into(),
                structured_output: None,
            }),
        ]
    );
    assert!(r.is_done());
}

#[test]
fn other_turns_and_conversations_are_skipped() {
    let mut r = TaskRenderer::new("h", 7);
    // Nothing counts before the turn is known.
    assert_eq!(r.render(&ev(Some(2), EventBody::TurnStarted {})), vec![]);
    r.follow_turn(3);
    assert_eq!(
        r.render(&ev(Some(2), EventBody::TurnCompleted { stop_reason: "end_turn".into(), result: None })),
        vec![]
    );
    assert_eq!(r.render(&Event::new(8, Some(3), EventBody::TurnCancelled {})), vec![]);
    assert!(!r.is_done());
}

#[test]
fn the_result_text_of_turn_completed_wins_and_becomes_structured_content() {
    let mut r = TaskRenderer::new("superpi-code", 7);
    r.follow_turn(1);
    r.render(&ev(Some(1), assistant(vec![KernelBlock::text("draft")])));
    let out = r.render(&ev(
        Some(1),
        EventBody::TurnCompleted { stop_reason: "end_turn".into(), result: Some("final".into()) },
    ));
    let [TaskOut::Finished(outcome)] = out.as_slice() else { panic!("{out:?}") };
    let result = outcome.clone().into_result();
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "final"}],
            "structuredContent": {
                "harness": "superpi-code",
                "conversation_id": 7,
                "turn_id": 1,
                "stop_reason": "end_turn",
                "result": "final"
            },
            "isError": false
        })
    );
}

#[test]
fn failed_and_cancelled_turns_are_error_results() {
    let mut r = TaskRenderer::new("h", 7);
    r.follow_turn(1);
    let out = r.render(&ev(Some(1), EventBody::TurnError { error: "model failed".into() }));
    let [TaskOut::Finished(outcome)] = out.as_slice() else { panic!("{out:?}") };
    let result = outcome.clone().into_result();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(result.content[0].as_text().unwrap().text, "model failed");
    assert_eq!(result.structured_content.unwrap()["stop_reason"], "error");

    let mut r = TaskRenderer::new("h", 7);
    r.follow_turn(1);
    let out = r.render(&ev(Some(1), EventBody::TurnCancelled {}));
    let [TaskOut::Finished(outcome)] = out.as_slice() else { panic!("{out:?}") };
    assert_eq!(outcome.status, TaskStatus::Cancelled);
    let result = outcome.clone().into_result();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(result.structured_content.unwrap()["stop_reason"], "cancelled");
}

#[test]
fn blocked_and_failed_tools_show_in_progress() {
    let mut r = TaskRenderer::new("h", 7);
    r.follow_turn(1);
    let blocked = r.render(&ev(
        Some(1),
        EventBody::ToolBlocked {
            tool_call_id: "c".into(),
            name: "write".into(),
            reason: "outside the workspace".into(),
        },
    ));
    let failed = r.render(&ev(
        Some(1),
        EventBody::ToolCompleted {
            tool_call_id: "c".into(),
            name: "write".into(),
            is_error: true,
            output: json!("refused"),
            structured: None,
            details: None,
        },
    ));
    assert_eq!(blocked, vec![progress(1.0, "write blocked: outside the workspace")]);
    assert_eq!(failed, vec![progress(2.0, "write failed")]);
}

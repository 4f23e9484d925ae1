use serde_json::json;
use superpi_proto::ContentBlock;

use super::*;
use crate::reassemble::{Reassembler, reassemble};
use crate::validate::validate;

#[test]
fn builder_streams_are_valid_and_reassemble_to_their_terminal() {
    let mut b = StreamBuilder::new();
    b.start(Some("r1".into()));
    b.thinking_delta("hmm");
    b.thinking_signature("sig");
    b.text_delta("hel");
    b.text_delta("lo");
    b.tool_start(Some("c1".into()), None);
    b.tool_delta("{\"a\":", None, Some("f".into()));
    b.tool_delta("1}", None, None);
    b.done(StopReason::ToolUse);
    let events: Vec<StreamEvent> = b.drain().collect();
    validate(&events).unwrap();
    let t = reassemble(&events);
    assert_eq!(t.response_id.as_deref(), Some("r1"));
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::Thinking { thinking: "hmm".into(), signature: Some("sig".into()), redacted: false },
            ContentBlock::text("hello"),
            ContentBlock::ToolCall { id: "c1".into(), name: "f".into(), arguments: json!({"a": 1}) },
        ]
    );
}

#[test]
fn reassembler_survives_missing_ends_and_terminal() {
    let events = vec![
        StreamEvent::Start { response_id: None },
        StreamEvent::TextStart { index: 0 },
        StreamEvent::TextDelta { index: 0, delta: "par".into() },
        StreamEvent::TextDelta { index: 0, delta: "tial".into() },
        StreamEvent::ToolCallDelta {
            index: 1,
            delta: "{\"x\":2}".into(),
            id: Some("c".into()),
            name: Some("t".into()),
        },
    ];
    let mut r = Reassembler::new();
    for e in &events {
        r.push(e);
    }
    assert_eq!(r.closed_blocks(), &[ContentBlock::text("partial")]);
    assert_eq!(r.partial_message().content.len(), 2);
    let t = r.finish(StopReason::Aborted);
    assert_eq!(t.stop_reason, StopReason::Aborted);
    assert!(t.error.is_some());
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::text("partial"),
            ContentBlock::ToolCall { id: "c".into(), name: "t".into(), arguments: json!({"x": 2}) },
        ]
    );
}

#[test]
fn reset_voids_what_came_before() {
    let mut b = StreamBuilder::new();
    b.text_delta("first try");
    b.reset(1000);
    b.text_delta("second");
    b.done(StopReason::EndTurn);
    let events: Vec<StreamEvent> = b.drain().collect();
    validate(&events).unwrap();
    assert!(events.contains(&StreamEvent::Reset { retry_in_ms: 1000 }));
    assert_eq!(reassemble(&events).message.content, vec![ContentBlock::text("second")]);
}

#[test]
fn fail_keeps_only_closed_blocks() {
    let mut b = StreamBuilder::new();
    b.text_delta("done block");
    b.tool_start(Some("c".into()), Some("t".into()));
    b.tool_delta("{\"cut", None, None);
    b.fail(ProviderError::Transport { provider: "x".into(), message: "cut".into() });
    b.text_delta("ignored after the terminal");
    let events: Vec<StreamEvent> = b.drain().collect();
    validate(&events).unwrap();
    let t = reassemble(&events);
    assert_eq!(t.stop_reason, StopReason::Error);
    assert_eq!(t.message.content, vec![ContentBlock::text("done block")]);
}

#[test]
fn validator_rejects_broken_streams() {
    let start = StreamEvent::Start { response_id: None };
    let done = || {
        let mut b = StreamBuilder::new();
        b.done(StopReason::EndTurn);
        b.drain().last().unwrap()
    };
    let cases: Vec<Vec<StreamEvent>> = vec![
        vec![],
        vec![done()],
        vec![start.clone()],
        vec![start.clone(), start.clone(), done()],
        vec![start.clone(), StreamEvent::TextDelta { index: 0, delta: "x".into() }, done()],
        vec![start.clone(), StreamEvent::TextStart { index: 0 }, done()],
        vec![
            start.clone(),
            StreamEvent::TextStart { index: 1 },
            StreamEvent::TextEnd { index: 1, content: String::new() },
            StreamEvent::TextStart { index: 1 },
            StreamEvent::TextEnd { index: 1, content: String::new() },
            done(),
        ],
        vec![
            start.clone(),
            StreamEvent::TextStart { index: 0 },
            StreamEvent::TextDelta { index: 0, delta: "a".into() },
            StreamEvent::TextEnd { index: 0, content: "b".into() },
            done(),
        ],
        vec![start.clone(), done(), done()],
        vec![
            start.clone(),
            StreamEvent::TextStart { index: 0 },
            StreamEvent::TextEnd { index: 0, content: "a".into() },
            done(),
        ],
    ];
    for (i, case) in cases.iter().enumerate() {
        assert!(validate(case).is_err(), "case {i} should be rejected: {case:?}");
    }
}

//! Property tests of the stream algebra: every stream a provider can emit keeps the invariants,
//! however its bytes are split, and folds back into its terminal's message.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::common;

use common::recorded;
use futures::StreamExt;
use proptest::prelude::*;
use superpi_proto::Message;
use superpi_providers::{
    MockProvider, ModelRequest, Provider, ProviderError, ProviderKind, Reassembler, StopReason, StreamBuilder,
    StreamEvent, parse_recorded_by, reassemble, validate,
};

const FIXTURES: [(&str, ProviderKind); 6] = [
    ("openai_text.sse", ProviderKind::Openai),
    // OpenAI's Responses API: see `parse`.
    ("responses_tools.sse", ProviderKind::Openai),
    ("openai_tools_interleaved.sse", ProviderKind::Openai),
    ("openai_tools_sequential.sse", ProviderKind::Openai),
    ("anthropic_tools.sse", ProviderKind::Anthropic),
    ("gemini_tools.sse", ProviderKind::Gemini),
];

/// Parses a fixture by its wire's parser: `responses_*` are the Responses API's.
fn parse_recorded<'a>(kind: ProviderKind, name: &str, chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<StreamEvent> {
    let api = match name.starts_with("responses_") {
        true => &superpi_providers::openai_responses::RESPONSES,
        false => superpi_providers::vendor::wire_api(kind),
    };
    parse_recorded_by(api, chunks)
}

/// Splits `body` at the given cut points.
fn split<'a>(body: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for point in points {
        pieces.push(&body[start..point]);
        start = point;
    }
    pieces.push(&body[start..]);
    pieces
}

#[test]
fn every_single_split_point_parses_the_same() {
    for (name, kind) in FIXTURES {
        let body = recorded(name);
        let whole = parse_recorded(kind, name, [body.as_slice()]);
        validate(&whole).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(matches!(whole.last(), Some(StreamEvent::Done(_))), "{name}: {whole:?}");
        for at in 0..=body.len() {
            let (a, b) = body.split_at(at);
            assert_eq!(parse_recorded(kind, name, [a, b]), whole, "{name} split at {at}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_split_parses_the_same(fixture in 0usize..FIXTURES.len(), cuts in prop::collection::vec(any::<usize>(), 0..40)) {
        let (name, kind) = FIXTURES[fixture];
        let body = recorded(name);
        let whole = parse_recorded(kind, name, [body.as_slice()]);
        prop_assert_eq!(parse_recorded(kind, name, split(&body, &cuts)), whole);
    }

    #[test]
    fn any_prefix_is_a_valid_stream(fixture in 0usize..FIXTURES.len(), cut in any::<usize>()) {
        let (name, kind) = FIXTURES[fixture];
        let body = recorded(name);
        let events = parse_recorded(kind, name, [&body[..cut % (body.len() + 1)]]);
        prop_assert!(validate(&events).is_ok(), "{:?}", validate(&events));
    }
}

#[derive(Debug, Clone)]
enum Op {
    Text(String),
    Thinking(String),
    ToolStart(bool),
    ToolDelta(String),
    Close,
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        "[a-z ]{0,6}".prop_map(Op::Text),
        "[a-z ]{0,6}".prop_map(Op::Thinking),
        any::<bool>().prop_map(Op::ToolStart),
        prop_oneof![Just("{\"a\":".to_string()), Just("1}".to_string()), Just(String::new())].prop_map(Op::ToolDelta),
        Just(Op::Close),
        Just(Op::Reset),
    ]
}

fn build(ops: &[Op], fail: bool) -> Vec<StreamEvent> {
    let mut b = StreamBuilder::new();
    b.start(Some("r".into()));
    let mut calls = 0;
    for op in ops {
        match op {
            Op::Text(t) => b.text_delta(t),
            Op::Thinking(t) => b.thinking_delta(t),
            Op::ToolStart(named) => {
                calls += 1;
                b.tool_start(Some(format!("c{calls}")), named.then(|| "tool".to_string()));
                if !named {
                    b.tool_delta("", None, Some("late".into()));
                }
            }
            Op::ToolDelta(d) => b.tool_delta(d, None, None),
            Op::Close => b.close(),
            Op::Reset => b.reset(1),
        }
    }
    if fail {
        b.fail(ProviderError::Model { message: "x".into() });
    } else {
        b.done(StopReason::EndTurn);
    }
    b.drain().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn builder_streams_keep_the_algebra(ops in prop::collection::vec(op(), 0..30), fail in any::<bool>()) {
        let events = build(&ops, fail);
        prop_assert!(validate(&events).is_ok(), "{:?}: {:?}", validate(&events), events);
        prop_assert_eq!(events.iter().filter(|e| e.is_terminal()).count(), 1);
    }

    #[test]
    fn the_reassembler_survives_missing_ends(ops in prop::collection::vec(op(), 0..30)) {
        let events = build(&ops, false);
        let Some(StreamEvent::Done(terminal)) = events.last() else { panic!("no Done") };
        prop_assert_eq!(&reassemble(&events).message, &terminal.message);
        // Without any end and without the terminal, the deltas alone rebuild the same blocks.
        let mut reassembler = Reassembler::new();
        for event in events.iter().filter(|e| {
            !matches!(e, StreamEvent::TextEnd { .. } | StreamEvent::ThinkingEnd { .. } | StreamEvent::ToolCallEnd { .. })
                && !e.is_terminal()
        }) {
            reassembler.push(event);
        }
        prop_assert_eq!(reassembler.finish(StopReason::Aborted).message.content, terminal.message.content.clone());
    }

    #[test]
    fn mock_streams_keep_the_algebra(lines in prop::collection::vec(prop_oneof![
        "[a-z ]{0,12}",
        Just("@think pondering".to_string()),
        Just("@tool ls {\"path\":\"/\"}".to_string()),
        Just("@tool bash".to_string()),
        Just("@deltas 3".to_string()),
        Just("@fail boom".to_string()),
        Just("@tool broken {".to_string()),
    ], 0..6)) {
        let request = ModelRequest { model: "mock".into(), messages: vec![Message::user_text(lines.join("\n"))], ..Default::default() };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let first: Vec<StreamEvent> = runtime.block_on(MockProvider::new().stream(request.clone()).collect());
        let second: Vec<StreamEvent> = runtime.block_on(MockProvider::new().stream(request).collect());
        prop_assert!(validate(&first).is_ok(), "{:?}", validate(&first));
        prop_assert_eq!(first, second);
    }
}

/// One tool call of a generated OpenAI stream: its arguments cut into pieces.
fn tool_calls() -> impl Strategy<Value = Vec<(String, Vec<usize>)>> {
    prop::collection::vec(
        (
            prop::collection::btree_map("[a-z]{1,4}", "[a-z0-9 ]{0,8}", 0..4),
            prop::collection::vec(any::<usize>(), 0..5),
        )
            .prop_map(|(args, cuts)| (serde_json::to_string(&args).unwrap(), cuts)),
        1..5,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn openai_tool_calls_survive_any_interleaving(calls in tool_calls(), order in prop::collection::vec(any::<usize>(), 0..60), text_first in any::<bool>()) {
        // Per call: the pieces of its arguments; the first piece carries the id and the name.
        let mut queues: Vec<std::collections::VecDeque<serde_json::Value>> = calls
            .iter()
            .enumerate()
            .map(|(i, (args, cuts))| {
                let pieces = split(args.as_bytes(), cuts);
                pieces
                    .iter()
                    .enumerate()
                    .map(|(n, piece)| {
                        let mut call = serde_json::json!({"index": i, "function": {"arguments": String::from_utf8_lossy(piece)}});
                        if n == 0 {
                            call["id"] = format!("call_{i}").into();
                            call["type"] = "function".into();
                            call["function"]["name"] = format!("tool{i}").into();
                        }
                        call
                    })
                    .collect()
            })
            .collect();
        let mut body = String::new();
        let mut chunk = |delta: serde_json::Value, finish: Option<&str>| {
            let value = serde_json::json!({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            body.push_str(&format!("data: {value}\n\n"));
        };
        if text_first {
            chunk(serde_json::json!({"content": "calling"}), None);
        }
        // Interleave: take the next piece of a pseudo-randomly chosen call, first pieces in call order.
        let mut opened = 0;
        let mut picks = order.into_iter().cycle();
        while queues.iter().any(|q| !q.is_empty()) {
            let open: Vec<usize> = (0..opened.min(queues.len())).filter(|i| !queues[*i].is_empty()).collect();
            let pick = picks.next().unwrap_or(0);
            let i = if opened < queues.len() && (open.is_empty() || pick % 3 == 0) {
                opened += 1;
                opened - 1
            } else {
                open[pick % open.len()]
            };
            let piece = queues[i].pop_front().unwrap();
            chunk(serde_json::json!({"tool_calls": [piece]}), None);
        }
        chunk(serde_json::json!({}), Some("tool_calls"));
        body.push_str("data: [DONE]\n\n");

        let events = parse_recorded(ProviderKind::Openai, "", [body.as_bytes()]);
        prop_assert!(validate(&events).is_ok(), "{:?}", validate(&events));
        let Some(StreamEvent::Done(terminal)) = events.last() else { panic!("{events:?}") };
        let mut got: Vec<(String, String, serde_json::Value)> = terminal
            .message
            .content
            .iter()
            .filter_map(|b| match b {
                superpi_proto::ContentBlock::ToolCall { id, name, arguments } => Some((id.clone(), name.clone(), arguments.clone())),
                _ => None,
            })
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let want: Vec<(String, String, serde_json::Value)> = calls
            .iter()
            .enumerate()
            .map(|(i, (args, _))| (format!("call_{i}"), format!("tool{i}"), serde_json::from_str(args).unwrap()))
            .collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(terminal.stop_reason, StopReason::ToolUse);
    }
}

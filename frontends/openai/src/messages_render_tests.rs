use super::*;
use serde_json::{Value, json};
use superpi_proto::{ContentBlock, Event, Role, Usage as KUsage};

use crate::render::{RenderOptions, Renderer};

const C: i64 = 3;
const T: i64 = 9;

/// The kernel events of a turn through the Chat Completions renderer (as the gateway runs it
/// for /v1/messages: usage always on), then through the encoder, all chunks at once or one
/// event at a time: both give the same events.
fn encode(thinking: bool, events: &[Event]) -> Vec<StreamEvent> {
    let options = RenderOptions {
        id: format!("chatcmpl-{C}-{T}"),
        created: 1700,
        model: "claude-sonnet-4-5".into(),
        include_usage: true,
        turn_id: T,
    };
    let mut renderer = Renderer::new(options.clone());
    let mut encoder = Encoder::new(thinking);
    let mut stepwise = encoder.events(&renderer.start(), None);
    let mut chunks = Renderer::new(options.clone()).start();
    let mut all = Renderer::new(options);
    all.start();
    for event in events {
        let step = renderer.render(event);
        let end = renderer.is_finished().then(|| renderer.failure());
        stepwise.extend(encoder.events(&step, end));
        chunks.extend(all.render(event));
    }
    let end = all.is_finished().then(|| all.failure());
    let whole = Encoder::new(thinking).events(&chunks, end);
    assert_eq!(stepwise, whole, "stepwise and whole differ");
    whole
}

fn json_of(events: &[StreamEvent]) -> Value {
    serde_json::to_value(events).unwrap()
}

fn assistant(content: Vec<ContentBlock>) -> Event {
    Event::message_completed(
        C,
        Some(T),
        Role::Assistant,
        content,
        Some(KUsage { input_tokens: 10, output_tokens: 3, ..Default::default() }),
    )
}

fn usage(input: u64, output: u64) -> Event {
    Event::usage_updated(
        C,
        Some(T),
        KUsage { input_tokens: input, output_tokens: output, ..Default::default() },
        KUsage { input_tokens: 100, output_tokens: 100, ..Default::default() },
    )
}

fn start() -> Value {
    json!([
        {"type": "message_start", "message": {
            "id": "msg_3_9", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        }},
        {"type": "ping"}
    ])
}

fn end(stop_reason: &str, input: u64, output: u64) -> Value {
    json!([
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
         "usage": {"input_tokens": input, "output_tokens": output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}},
        {"type": "message_stop"}
    ])
}

fn concat(parts: &[Value]) -> Value {
    Value::Array(parts.iter().flat_map(|p| p.as_array().unwrap().clone()).collect())
}

fn thinking_answer() -> Vec<Event> {
    vec![
        Event::turn_started(C, T),
        Event::thinking_delta(C, Some(T), 0, "hmm"),
        Event::text_delta(C, Some(T), 1, "Hel"),
        Event::text_delta(C, Some(T), 1, "lo"),
        assistant(vec![
            ContentBlock::Thinking { thinking: "hmm".into(), signature: None, redacted: false },
            ContentBlock::text("Hello"),
        ]),
        usage(10, 3),
        Event::turn_completed(C, T, Some("Hello".into()), "end_turn"),
    ]
}

#[test]
fn thinking_asked_for_comes_as_thinking_blocks_before_the_text() {
    let events = encode(true, &thinking_answer());
    assert_eq!(
        json_of(&events),
        concat(&[
            start(),
            json!([
                {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}},
                {"type": "content_block_stop", "index": 0},
                {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hel"}},
                {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "lo"}},
                // The renderer's line break after the thinking (for readers that join both
                // channels) opens no block of its own.
                {"type": "content_block_stop", "index": 1},
            ]),
            end("end_turn", 10, 3),
        ])
    );
    let message = serde_json::to_value(message_of(&events).unwrap()).unwrap();
    assert_eq!(
        message,
        json!({
            "id": "msg_3_9", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "thinking", "thinking": "hmm", "signature": ""}, {"type": "text", "text": "Hello"}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        })
    );
}

#[test]
fn without_thinking_the_reasoning_channel_is_left_out_and_text_is_one_block() {
    let mut events = vec![
        Event::turn_started(C, T),
        Event::thinking_delta(C, Some(T), 0, "hmm"),
        Event::text_delta(C, Some(T), 1, "Looking."),
        assistant(vec![ContentBlock::text("Looking.")]),
        Event::tool_started(C, Some(T), "c1", "ls", json!({"path": "."}), vec![]),
        Event::tool_completed(C, Some(T), "c1", "ls", false, json!("a.txt")),
        Event::text_delta(C, Some(T), 2, "Found a.txt"),
        assistant(vec![ContentBlock::text("Found a.txt")]),
        usage(20, 5),
    ];
    events.push(Event::turn_completed(C, T, Some("Found a.txt".into()), "end_turn"));
    let out = encode(false, &events);
    assert_eq!(
        json_of(&out),
        concat(&[
            start(),
            json!([
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Looking."}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "\n\nFound a.txt"}},
                {"type": "content_block_stop", "index": 0},
            ]),
            end("end_turn", 20, 5),
        ])
    );
    let message = message_of(&out).unwrap();
    assert_eq!(message.content, vec![Block::Text { text: "Looking.\n\nFound a.txt".into() }]);
}

#[test]
fn with_thinking_tool_progress_sits_between_text_blocks_without_a_paragraph_break() {
    let events = vec![
        Event::turn_started(C, T),
        Event::text_delta(C, Some(T), 1, "Looking."),
        assistant(vec![ContentBlock::text("Looking.")]),
        Event::tool_started(C, Some(T), "c1", "ls", json!({"path": "."}), vec![]),
        Event::tool_completed(C, Some(T), "c1", "ls", false, json!("a.txt")),
        Event::text_delta(C, Some(T), 2, "Found a.txt"),
        assistant(vec![ContentBlock::text("Found a.txt")]),
        Event::turn_completed(C, T, Some("Found a.txt".into()), "end_turn"),
    ];
    let message = message_of(&encode(true, &events)).unwrap();
    assert_eq!(
        message.content,
        vec![
            Block::Text { text: "Looking.".into() },
            Block::Thinking {
                thinking: "[tool] ls {\"path\":\".\"}\n[tool] ls done\n".into(),
                signature: String::new()
            },
            Block::Text { text: "Found a.txt".into() },
        ]
    );
}

#[test]
fn the_output_limit_is_max_tokens() {
    let events = vec![
        Event::turn_started(C, T),
        Event::text_delta(C, Some(T), 1, "cut"),
        assistant(vec![ContentBlock::text("cut")]),
        Event::turn_completed(C, T, Some("cut".into()), "max_tokens"),
    ];
    let message = message_of(&encode(false, &events)).unwrap();
    assert_eq!(message.stop_reason, Some("max_tokens"));
    assert_eq!(message.content, vec![Block::Text { text: "cut".into() }]);
}

#[test]
fn a_failed_turn_ends_with_an_error_event_and_no_message_delta() {
    let events = vec![
        Event::turn_started(C, T),
        Event::text_delta(C, Some(T), 1, "par"),
        Event::turn_error(C, T, "the model broke"),
    ];
    let out = encode(false, &events);
    let names: Vec<&str> = out.iter().map(StreamEvent::name).collect();
    assert_eq!(names, ["message_start", "ping", "content_block_start", "content_block_delta", "error"]);
    assert_eq!(
        serde_json::to_value(out.last().unwrap()).unwrap(),
        json!({"type": "error", "error": {"type": "api_error", "message": "the model broke"}})
    );
}

#[test]
fn an_empty_answer_is_a_message_without_content() {
    let events = vec![Event::turn_started(C, T), Event::turn_completed(C, T, None, "end_turn")];
    let out = encode(true, &events);
    assert_eq!(json_of(&out), concat(&[start(), end("end_turn", 0, 0)]));
    assert_eq!(message_of(&out).unwrap().content, vec![]);
}

#[test]
fn frames_name_their_event() {
    assert_eq!(&StreamEvent::MessageStop.frame()[..], b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    assert_eq!(&StreamEvent::Ping.frame()[..], b"event: ping\ndata: {\"type\":\"ping\"}\n\n");
    let delta = StreamEvent::ContentBlockDelta { index: 2, delta: BlockDelta::TextDelta { text: "a\nb".into() } };
    assert_eq!(
        &delta.frame()[..],
        b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\\nb\"}}\n\n"
    );
}

mod props {
    //! Over any answer the renderer may make (text and reasoning in any order and split, then
    //! a finish with usage or a failure), the events keep the Messages grammar and carry the
    //! whole text.

    use super::*;
    use crate::render::Failure;
    use crate::wire::{ChunkChoice, Delta, Usage as ChatUsage};
    use proptest::prelude::*;

    fn chunk(delta: Delta, finish_reason: Option<&'static str>) -> Chunk {
        Chunk {
            id: "chatcmpl-3-9".into(),
            object: "chat.completion.chunk",
            created: 1,
            model: "m".into(),
            choices: vec![ChunkChoice { index: 0, delta, finish_reason }],
            usage: None,
        }
    }

    fn piece() -> impl Strategy<Value = (bool, String)> {
        (any::<bool>(), "(\n\n)?[a-z \n]{0,12}")
    }

    /// The grammar, checked; the message the events add up to, built by hand.
    fn check_grammar(events: &[StreamEvent]) -> Result<(Vec<Block>, bool), TestCaseError> {
        let starts = matches!(events.first(), Some(StreamEvent::MessageStart { .. }));
        prop_assert!(starts, "message_start first");
        prop_assert_eq!(events.get(1), Some(&StreamEvent::Ping));
        let mut blocks: Vec<Block> = Vec::new();
        let mut open = false;
        let mut failed = false;
        for (i, event) in events.iter().enumerate().skip(2) {
            let last = i + 1 == events.len();
            match event {
                StreamEvent::ContentBlockStart { index, content_block } => {
                    prop_assert!(!open);
                    prop_assert_eq!(*index, blocks.len());
                    blocks.push(content_block.clone());
                    open = true;
                }
                StreamEvent::ContentBlockDelta { index, delta } => {
                    prop_assert!(open);
                    prop_assert_eq!(*index + 1, blocks.len());
                    match (blocks.last_mut(), delta) {
                        (Some(Block::Text { text }), BlockDelta::TextDelta { text: more }) => text.push_str(more),
                        (Some(Block::Thinking { thinking, .. }), BlockDelta::ThinkingDelta { thinking: more }) => {
                            thinking.push_str(more)
                        }
                        _ => prop_assert!(false, "a delta of another kind than its block"),
                    }
                }
                StreamEvent::ContentBlockStop { index } => {
                    prop_assert!(open);
                    prop_assert_eq!(*index + 1, blocks.len());
                    open = false;
                }
                StreamEvent::MessageDelta { .. } => {
                    prop_assert!(!open);
                    prop_assert_eq!(i + 2, events.len());
                }
                StreamEvent::MessageStop => prop_assert!(last),
                StreamEvent::Error { .. } => {
                    prop_assert!(last);
                    failed = true;
                }
                other => prop_assert!(false, "unexpected {other:?}"),
            }
        }
        for block in &blocks {
            let empty = match block {
                Block::Text { text } => text.is_empty(),
                Block::Thinking { thinking, .. } => thinking.is_empty(),
            };
            prop_assert!(!empty, "an empty block: {block:?}");
        }
        Ok((blocks, failed))
    }

    proptest! {
        #[test]
        fn any_answer_keeps_the_event_grammar(
            pieces in proptest::collection::vec(piece(), 0..8),
            split_at in 0usize..10,
            thinking in any::<bool>(),
            fail in any::<bool>(),
            length in any::<bool>(),
        ) {
            let mut chunks = vec![chunk(Delta { role: Some("assistant"), content: Some(String::new()), ..Default::default() }, None)];
            for (is_text, text) in &pieces {
                let delta = if *is_text {
                    Delta { content: Some(text.clone()), ..Default::default() }
                } else {
                    Delta { reasoning_content: Some(text.clone()), ..Default::default() }
                };
                chunks.push(chunk(delta, None));
            }
            let failure = Failure { code: "turn_failed", message: "boom".into() };
            if !fail {
                chunks.push(chunk(Delta::default(), Some(if length { "length" } else { "stop" })));
                let mut usage = chunk(Delta::default(), None);
                usage.choices.clear();
                usage.usage = Some(ChatUsage::new(7, 5));
                chunks.push(usage);
            }
            let end = Some(fail.then_some(&failure));
            // In two parts, as a stream delivers them, and at once: the same events.
            let cut = split_at.min(chunks.len());
            let mut encoder = Encoder::new(thinking);
            let mut events = encoder.events(&chunks[..cut], None);
            events.extend(encoder.events(&chunks[cut..], end));
            prop_assert_eq!(&events, &Encoder::new(thinking).events(&chunks, end));

            let (blocks, failed) = check_grammar(&events)?;
            prop_assert_eq!(failed, fail);
            let text: String = pieces.iter().filter(|(t, _)| *t).map(|(_, s)| s.as_str()).collect();
            let sent: String = blocks.iter().filter_map(|b| match b { Block::Text { text } => Some(text.as_str()), _ => None }).collect();
            if thinking {
                // Only paragraph breaks ahead of a later text block are left out.
                prop_assert_eq!(sent.replace("\n\n", ""), text.replace("\n\n", ""));
            } else {
                prop_assert!(blocks.len() <= 1, "{:?}", blocks);
                prop_assert_eq!(sent, text);
            }
            if !fail {
                let message = message_of(&events).unwrap();
                prop_assert_eq!(&message.content, &blocks);
                prop_assert_eq!(message.stop_reason, Some(if length { "max_tokens" } else { "end_turn" }));
                prop_assert_eq!((message.usage.input_tokens, message.usage.output_tokens), (7, 5));
            }
        }
    }
}

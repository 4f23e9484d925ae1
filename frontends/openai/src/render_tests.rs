use super::*;
use serde_json::{Value, json};
use superpi_proto::Usage as KUsage;

const C: i64 = 1;
const T: i64 = 7;

fn renderer(include_usage: bool) -> Renderer {
    Renderer::new(RenderOptions {
        id: "chatcmpl-1-7".into(),
        created: 1700,
        model: "superpi-code".into(),
        include_usage,
        turn_id: T,
    })
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({
        "id": "chatcmpl-1-7", "object": "chat.completion.chunk", "created": 1700, "model": "superpi-code",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    })
}

fn run(r: &mut Renderer, events: &[Event]) -> Value {
    let mut out = r.start();
    for e in events {
        out.extend(r.render(e));
    }
    serde_json::to_value(out).unwrap()
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

#[test]
fn a_streamed_answer_with_usage() {
    let mut r = renderer(true);
    let out = run(
        &mut r,
        &[
            Event::message_completed(C, Some(T), Role::User, vec![ContentBlock::text("hi")], None),
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
        ],
    );
    assert_eq!(
        out,
        json!([
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"reasoning_content": "hmm"}), Value::Null),
            chunk(json!({"content": "Hel"}), Value::Null),
            chunk(json!({"content": "lo"}), Value::Null),
            chunk(json!({"reasoning_content": "\n"}), Value::Null),
            chunk(json!({}), json!("stop")),
            {
                "id": "chatcmpl-1-7", "object": "chat.completion.chunk", "created": 1700, "model": "superpi-code",
                "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
            }
        ])
    );
    assert!(r.is_finished());
    assert!(r.render(&Event::text_delta(C, Some(T), 0, "late")).is_empty());
    assert!(r.flush().is_empty());
}

#[test]
fn tool_progress_goes_to_reasoning_and_answers_are_separated() {
    let mut r = renderer(false);
    let out = run(
        &mut r,
        &[
            Event::turn_started(C, T),
            Event::text_delta(C, Some(T), 0, "Looking."),
            Event::toolcall_delta(C, Some(T), 1, Some("{".into()), json!({}), Some("c1".into()), Some("ls".into())),
            assistant(vec![
                ContentBlock::text("Looking."),
                ContentBlock::ToolCall { id: "c1".into(), name: "ls".into(), arguments: json!({"path": "."}) },
            ]),
            usage(10, 3),
            Event::tool_started(C, Some(T), "c1", "ls", json!({"path": "."}), vec![]),
            Event::tool_output(C, Some(T), "c1", "ls", "a\n"),
            Event::tool_completed(C, Some(T), "c1", "ls", false, json!("a\nb")),
            Event::tool_blocked(C, Some(T), "c2", "bash", "plan mode blocks exec"),
            Event::tool_completed(C, Some(T), "c2", "bash", true, json!("blocked")),
            Event::tool_completed(C, Some(T), "c3", "read", true, json!("no such file\nmore")),
            Event::text_delta(C, Some(T), 0, "Two files."),
            assistant(vec![ContentBlock::text("Two files.")]),
            usage(20, 4),
            Event::turn_completed(C, T, Some("Two files.".into()), "max_tokens"),
        ],
    );
    assert_eq!(
        out,
        json!([
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": "Looking."}), Value::Null),
            chunk(json!({"reasoning_content": "[tool] ls {\"path\":\".\"}\n"}), Value::Null),
            chunk(json!({"reasoning_content": "[tool] ls done\n"}), Value::Null),
            chunk(json!({"reasoning_content": "[tool] bash blocked: plan mode blocks exec\n"}), Value::Null),
            chunk(json!({"reasoning_content": "[tool] read failed: no such file\n"}), Value::Null),
            chunk(json!({"content": "\n\nTwo files."}), Value::Null),
            chunk(json!({}), json!("length")),
        ])
    );
}

#[test]
fn other_turns_and_envelope_events_are_not_rendered() {
    let mut r = renderer(false);
    r.start();
    assert!(r.render(&Event::text_delta(C, Some(T + 1), 0, "other turn")).is_empty());
    assert!(r.render(&Event::turn_completed(C, T - 1, None, "end_turn")).is_empty());
    assert!(r.render(&Event::mode_changed(C, "plan", None)).is_empty());
    assert!(r.render(&Event::turn_started(C, T)).is_empty());
    assert!(r.turn_started());
    assert!(!r.is_finished());
}

#[test]
fn missed_deltas_are_recovered_from_the_completed_message() {
    // A lagged subscription replays stored events only: no deltas, the whole message.
    let mut r = renderer(false);
    let out = run(
        &mut r,
        &[
            Event::turn_started(C, T),
            Event::text_delta(C, Some(T), 0, "Hel"),
            assistant(vec![ContentBlock::text("Hello world")]),
            Event::turn_completed(C, T, None, "end_turn"),
        ],
    );
    assert_eq!(
        out,
        json!([
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": "Hel"}), Value::Null),
            chunk(json!({"content": "lo world"}), Value::Null),
            chunk(json!({}), json!("stop")),
        ])
    );
}

#[test]
fn usage_comes_from_message_usage_when_no_usage_updated_arrives() {
    let mut r = renderer(true);
    let out = run(&mut r, &[assistant(vec![ContentBlock::text("x")]), Event::turn_completed(C, T, None, "end_turn")]);
    assert_eq!(out[3]["usage"], json!({"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}));
}

#[test]
fn a_failed_turn_ends_in_a_failure_not_a_finish_reason() {
    let mut r = renderer(true);
    let out = run(
        &mut r,
        &[
            Event::turn_started(C, T),
            Event::thinking_delta(C, Some(T), 0, "let me"),
            Event::turn_error(C, T, "provider said 500"),
        ],
    );
    assert_eq!(
        out,
        json!([
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"reasoning_content": "let me"}), Value::Null),
            chunk(json!({"reasoning_content": "\n[error] provider said 500\n"}), Value::Null),
        ])
    );
    assert!(r.is_finished());
    assert_eq!(r.failure(), Some(&Failure { code: "turn_failed", message: "provider said 500".into() }));
    assert!(r.flush().is_empty());
}

#[test]
fn cancelled_turns_stop_and_lost_kernels_error() {
    let mut r = renderer(false);
    let out = run(&mut r, &[Event::turn_started(C, T), Event::turn_cancelled(C, T)]);
    assert_eq!(
        out,
        json!([
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"reasoning_content": "[cancelled]\n"}), Value::Null),
            chunk(json!({}), json!("stop")),
        ])
    );
    let mut r = renderer(false);
    let out = serde_json::to_value(r.flush()).unwrap();
    assert_eq!(
        out,
        json!([
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"reasoning_content": "[error] the connection to the superpi kernel was lost\n"}), Value::Null),
        ])
    );
    assert_eq!(r.failure().map(|f| f.code), Some("kernel_unavailable"));
}

#[test]
fn stream_resets_and_notices_are_progress() {
    let mut r = renderer(false);
    let out = run(
        &mut r,
        &[
            Event::notice(C, Some(T), "warn", "no provider configured: using the mock model"),
            Event::text_delta(C, Some(T), 0, "par"),
            Event::stream_reset(C, Some(T), 250),
            Event::text_delta(C, Some(T), 0, "partial"),
            assistant(vec![ContentBlock::text("partial")]),
        ],
    );
    assert_eq!(
        out,
        json!([
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"reasoning_content": "[warn] no provider configured: using the mock model\n"}), Value::Null),
            chunk(json!({"content": "par"}), Value::Null),
            chunk(json!({"reasoning_content": "[model stream interrupted; retrying in 250 ms]\n"}), Value::Null),
            chunk(json!({"content": "\n\npartial"}), Value::Null),
        ])
    );
}

#[test]
fn chunks_fold_into_one_completion() {
    let mut r = renderer(true);
    let mut chunks = r.start();
    for e in [
        Event::thinking_delta(C, Some(T), 0, "think"),
        Event::text_delta(C, Some(T), 1, "Hi"),
        assistant(vec![ContentBlock::text("Hi there")]),
        usage(5, 2),
        Event::turn_completed(C, T, None, "end_turn"),
    ] {
        chunks.extend(r.render(&e));
    }
    let completion = crate::wire::Completion::from_chunks(&chunks).unwrap();
    assert_eq!(
        serde_json::to_value(completion).unwrap(),
        json!({
            "id": "chatcmpl-1-7", "object": "chat.completion", "created": 1700, "model": "superpi-code",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi there", "reasoning_content": "think\n"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        })
    );
}

#[test]
fn after_a_lag_the_completed_message_fills_in_the_lost_deltas() {
    let mut r = renderer(false);
    let mut out = r.start();
    out.extend(r.render(&Event::text_delta(C, Some(T), 0, "Hel")));
    // Deltas "lo " were lost; the subscription caught up and live deltas go on.
    r.lagged();
    out.extend(r.render(&Event::text_delta(C, Some(T), 0, "world")));
    out.extend(r.render(&assistant(vec![ContentBlock::text("Hello world")])));
    // The next model call streams normally again.
    out.extend(r.render(&Event::text_delta(C, Some(T), 0, "Next")));
    assert_eq!(
        serde_json::to_value(out).unwrap(),
        json!([
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": "Hel"}), Value::Null),
            chunk(json!({"content": "lo world"}), Value::Null),
            chunk(json!({"content": "\n\nNext"}), Value::Null),
        ])
    );
}

#[test]
fn a_structured_turn_sends_only_its_accepted_json_as_content() {
    let mut r = renderer(false).structured(true);
    let out = run(
        &mut r,
        &[
            Event::turn_started(C, T),
            Event::text_delta(C, Some(T), 0, "three"),
            assistant(vec![ContentBlock::text("three")]),
            Event::text_delta(C, Some(T), 0, "{\"n\": 4}"),
            assistant(vec![ContentBlock::text("{\"n\": 4}")]),
            Event::turn_completed(C, T, Some(r#"{"n":4}"#.into()), "end_turn"),
        ],
    );
    assert_eq!(
        out,
        json!([
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": r#"{"n":4}"#}), Value::Null),
            chunk(json!({}), json!("stop")),
        ])
    );

    // Refused twice: its own failure code; another failure of a structured turn keeps its own.
    let mut r = renderer(false).structured(true);
    let why = format!("{OUTPUT_SCHEMA_FAILED}, after 1 retry: at /n: \"x\" is not of type \"integer\"");
    run(&mut r, &[Event::turn_started(C, T), Event::turn_error(C, T, why.clone())]);
    assert_eq!(r.failure(), Some(&Failure { code: OUTPUT_SCHEMA_MISMATCH, message: why }));
    let mut r = renderer(false).structured(true);
    run(&mut r, &[Event::turn_started(C, T), Event::turn_error(C, T, "provider said 500")]);
    assert_eq!(r.failure().map(|f| f.code), Some("turn_failed"));
}

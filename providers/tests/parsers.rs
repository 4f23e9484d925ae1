//! Edge cases of each vendor's stream, fed as recorded bytes.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::json;
use superpi_proto::ContentBlock;
use superpi_providers::vendor::wire_api;
use superpi_providers::{
    ProviderError, ProviderKind, StopReason, StreamEvent, Terminal, parse_recorded, parse_recorded_by, validate,
};

fn parse(kind: ProviderKind, body: &str) -> Terminal {
    let events = parse_recorded(kind, [body.as_bytes()]);
    validate(&events).unwrap_or_else(|err| panic!("{err}: {events:#?}"));
    match events.last() {
        Some(StreamEvent::Done(t)) | Some(StreamEvent::Error(t)) => t.clone(),
        other => panic!("{other:?}"),
    }
}

fn sse(chunks: &[serde_json::Value]) -> String {
    chunks.iter().map(|c| format!("data: {c}\n\n")).collect()
}

#[test]
fn openai_call_without_id_gets_one_from_the_response() {
    let body = sse(&[
        json!({"id": "chatcmpl-9", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "ls", "arguments": "{}"}}]}}]}),
        json!({"id": "chatcmpl-9", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]);
    let t = parse(ProviderKind::Openai, &body);
    assert_eq!(t.stop_reason, StopReason::ToolUse, "tool calls mean tool use even when the server says stop");
    assert_eq!(
        t.message.content,
        vec![ContentBlock::ToolCall { id: "call_chatcmpl-9_1".into(), name: "ls".into(), arguments: json!({}) }]
    );
}

#[test]
fn openai_finish_reasons() {
    for (reason, stop) in
        [("length", StopReason::MaxTokens), ("content_filter", StopReason::Refusal), ("stop", StopReason::EndTurn)]
    {
        let body = sse(&[
            json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "x"}}]}),
            json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
        ]);
        assert_eq!(parse(ProviderKind::Openai, &body).stop_reason, stop, "{reason}");
    }
    let body = sse(&[
        json!({"id": "c", "choices": [{"index": 0, "delta": {"refusal": "I can't."}, "finish_reason": "stop"}]}),
    ]);
    let t = parse(ProviderKind::Openai, &body);
    assert_eq!((t.stop_reason, t.message.text()), (StopReason::Refusal, "I can't.".to_string()));
}

#[test]
fn openai_error_object_in_the_stream() {
    let body = sse(&[json!({"error": {"message": "context too long", "code": 400}})]);
    let t = parse(ProviderKind::Openai, &body);
    assert_eq!(
        t.error,
        Some(ProviderError::Http { provider: "openai".into(), status: 400, message: "context too long".into() })
    );
}

#[test]
fn anthropic_redacted_thinking_and_max_tokens() {
    let events = [
        json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "ENCRYPTED"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "trunc"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ];
    let body: String =
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect();
    let t = parse(ProviderKind::Anthropic, &body);
    assert_eq!(t.stop_reason, StopReason::MaxTokens);
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::Thinking { thinking: String::new(), signature: Some("ENCRYPTED".into()), redacted: true },
            ContentBlock::text("trunc"),
        ]
    );
}

#[test]
fn gemini_finish_reasons_and_blocked_prompts() {
    for (reason, stop) in
        [("MAX_TOKENS", StopReason::MaxTokens), ("SAFETY", StopReason::Refusal), ("STOP", StopReason::EndTurn)]
    {
        let body = sse(&[
            json!({"candidates": [{"content": {"parts": [{"text": "x"}], "role": "model"}, "finishReason": reason}]}),
        ]);
        assert_eq!(parse(ProviderKind::Gemini, &body).stop_reason, stop, "{reason}");
    }
    let body = sse(&[json!({"promptFeedback": {"blockReason": "SAFETY"}})]);
    let t = parse(ProviderKind::Gemini, &body);
    assert!(matches!(&t.error, Some(ProviderError::Http { message, .. }) if message.contains("SAFETY")), "{t:?}");
    let body = sse(&[json!({"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}})]);
    let t = parse(ProviderKind::Gemini, &body);
    assert_eq!(
        t.error,
        Some(ProviderError::Http { provider: "gemini".into(), status: 429, message: "Resource exhausted".into() })
    );
}

#[test]
fn garbage_never_panics() {
    let responses = &superpi_providers::openai_responses::RESPONSES;
    for api in
        [wire_api(ProviderKind::Openai), wire_api(ProviderKind::Anthropic), wire_api(ProviderKind::Gemini), responses]
    {
        let kind = api.kind;
        for body in [
            "",
            "data:\n\n",
            "data: null\n\n",
            "data: []\n\n",
            "data: 12\n\n",
            "event: x\ndata: {\"type\":7}\n\n",
            "\u{0}\u{1}garbage",
        ] {
            let events = parse_recorded_by(api, [body.as_bytes()]);
            validate(&events).unwrap_or_else(|err| panic!("{kind:?} {body:?}: {err}"));
            assert!(matches!(events.last(), Some(StreamEvent::Error(_))), "{kind:?} {body:?}: {events:?}");
        }
    }
}

#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::json;
use superpi_proto::{Effort, Message};

use super::*;
use crate::http::parse_recorded_by;
use crate::route::Auth;
use crate::stream::{StreamEvent, Terminal, ToolSpec};

fn route(model: &str) -> Route {
    Route {
        kind: ProviderKind::Openai,
        name: model.into(),
        model: model.into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        auth: Auth::None,
        thinking_budget: None,
        reasoning_effort: None,
        reasoning: is_reasoning_model(model),
        responses: true,
        tool_search: true,
    }
}

fn body(route: &Route, request: &ModelRequest) -> Value {
    serde_json::from_slice(&build_request(route, request).body).unwrap()
}

fn events(body: &str) -> Vec<StreamEvent> {
    let events = parse_recorded_by(&RESPONSES, [body.as_bytes()]);
    crate::validate(&events).unwrap_or_else(|err| panic!("{err}: {events:#?}"));
    events
}

fn terminal(body: &str) -> Terminal {
    match events(body).pop() {
        Some(StreamEvent::Done(t)) | Some(StreamEvent::Error(t)) => t,
        other => panic!("{other:?}"),
    }
}

fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect()
}

fn completed(status: &str, extra: Value) -> Value {
    let mut response = json!({"id": "resp_9", "status": status, "output": [],
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 2}});
    for (k, v) in extra.as_object().unwrap() {
        response[k] = v.clone();
    }
    let kind = if status == "completed" { "response.completed" } else { "response.incomplete" };
    json!({"type": kind, "response": response})
}

#[test]
fn the_request_carries_instructions_items_tools_and_reasoning() {
    let history = vec![
        Message::user_text("list /tmp"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "plan".into(),
                    signature: Some("openai:ENC1".into()),
                    redacted: false,
                },
                ContentBlock::Thinking {
                    thinking: "anthropic's".into(),
                    signature: Some("sig".into()),
                    redacted: false,
                },
                ContentBlock::text("Listing."),
                ContentBlock::ToolCall { id: "call_1".into(), name: "ls".into(), arguments: json!({"path": "/tmp"}) },
            ],
            usage: None,
            stop_reason: None,
        },
        Message {
            role: Role::Tool,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: "call_1".into(),
                name: "ls".into(),
                output: "a.txt".into(),
                is_error: false,
                structured: None,
                details: None,
            }],
            usage: None,
            stop_reason: None,
        },
        Message {
            role: Role::Assistant,
            // Reasoning that led to nothing kept is not sent.
            content: vec![ContentBlock::Thinking {
                thinking: String::new(),
                signature: Some("openai:ENC2".into()),
                redacted: false,
            }],
            usage: None,
            stop_reason: None,
        },
    ];
    let request = ModelRequest {
        model: "gpt-5-codex".into(),
        system: Some("Be brief.".into()),
        messages: history,
        tools: vec![ToolSpec {
            name: "ls".into(),
            description: "List".into(),
            input_schema: json!({"type": "object"}),
            deferred: false,
        }],
        max_tokens: Some(8),
        effort: Some(Effort::Off),
        output_schema: None,
    };
    let body = body(&route("gpt-5-codex"), &request);
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!((body["stream"].clone(), body["store"].clone()), (json!(true), json!(false)));
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    // Codex models do not reason `minimal`: the nearest level they take.
    assert_eq!(body["reasoning"], json!({"effort": "low", "summary": "auto"}));
    assert_eq!(body["max_output_tokens"], 16, "the API's floor");
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "ls", "description": "List", "parameters": {"type": "object"}, "strict": false}])
    );
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list /tmp"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "ENC1"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]},
            {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{\"path\":\"/tmp\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
        ])
    );
    assert!(body["prompt_cache_key"].as_str().unwrap().starts_with("superpi-"));
    assert_eq!(
        crate::testing::rules::responses::check(&body).unwrap_err().code.as_deref(),
        Some("invalid_encrypted_content")
    );
}

#[test]
fn a_model_without_reasoning_gets_no_reasoning_settings() {
    let request = ModelRequest { messages: vec![Message::user_text("hi")], ..Default::default() };
    let body = body(&route("gpt-4.1"), &request);
    assert!(body.get("reasoning").is_none() && body.get("include").is_none(), "{body}");
    assert_eq!(crate::testing::rules::responses::check(&body), Ok(()));
}

#[test]
fn the_cache_key_stays_for_a_conversation_and_differs_between_conversations() {
    let key = |messages: Vec<Message>| {
        let request = ModelRequest { system: Some("sys".into()), messages, ..Default::default() };
        body(&route("gpt-5-codex"), &request)["prompt_cache_key"].clone()
    };
    let first = key(vec![Message::user_text("a")]);
    let answer =
        Message { role: Role::Assistant, content: vec![ContentBlock::text("b")], usage: None, stop_reason: None };
    assert_eq!(first, key(vec![Message::user_text("a"), answer, Message::user_text("c")]));
    assert_ne!(first, key(vec![Message::user_text("other")]));
}

#[test]
fn an_unverified_organisation_is_asked_again_without_summaries() {
    let request = ModelRequest { messages: vec![Message::user_text("hi")], ..Default::default() };
    let mut route = route("o3-pro");
    route.base_url = "http://127.0.0.1:1/unverified".into();
    let wire = build_request(&route, &request);
    let refused = ProviderError::Http {
        provider: "openai".into(),
        status: 400,
        message: "Your organization must be verified to generate reasoning summaries. Please go to: ...".into(),
    };
    let again = adjust(&wire, &refused).unwrap();
    let body: Value = serde_json::from_slice(&again.body).unwrap();
    assert!(body["reasoning"].get("summary").is_none(), "{body}");
    let later: Value = serde_json::from_slice(&build_request(&route, &request).body).unwrap();
    assert!(later["reasoning"].get("summary").is_none(), "remembered for the endpoint: {later}");
    let other = ProviderError::Http { provider: "openai".into(), status: 400, message: "bad".into() };
    assert_eq!(adjust(&wire, &other), None);
}

#[test]
fn the_recorded_stream_reads_reasoning_text_and_calls_with_usage() {
    let body = String::from_utf8(crate::testing::recorded("responses_tools.sse").unwrap()).unwrap();
    let t = terminal(&body);
    assert_eq!(t.stop_reason, StopReason::ToolUse);
    assert_eq!(t.response_id.as_deref(), Some("resp_01"));
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::Thinking {
                thinking: "**Listing** the files first.\n\nThen wörds ✓.".into(),
                signature: Some("openai:gAAAAABoENC0zaRQ==".into()),
                redacted: false
            },
            ContentBlock::text("Listing files."),
            ContentBlock::ToolCall { id: "call_a".into(), name: "ls".into(), arguments: json!({"path": "/tmp"}) },
            ContentBlock::ToolCall { id: "call_b".into(), name: "read".into(), arguments: json!({"path": "a.txt"}) },
        ]
    );
    assert_eq!(
        t.usage,
        superpi_proto::Usage {
            input_tokens: 2048,
            output_tokens: 96,
            cached_input_tokens: 1920,
            cache_write_tokens: 0
        }
    );
    assert_eq!(t.details, crate::UsageDetails { reasoning_tokens: 64 });
}

#[test]
fn reasoning_without_a_summary_still_travels_and_items_sent_only_whole_are_read() {
    let body = sse(&[
        json!({"type": "response.created", "response": {"id": "resp_9"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "E"}}),
        // A server that sends items only when done.
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "id": "m", "content": [{"type": "output_text", "text": "whole"}]}}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc", "call_id": "c1", "name": "ls", "arguments": "{}"}}),
        completed("completed", json!({})),
    ]);
    let t = terminal(&body);
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::Thinking { thinking: String::new(), signature: Some("openai:E".into()), redacted: false },
            ContentBlock::text("whole"),
            ContentBlock::ToolCall { id: "c1".into(), name: "ls".into(), arguments: json!({}) },
        ]
    );
    assert_eq!(t.stop_reason, StopReason::ToolUse);
}

#[test]
fn arguments_that_come_only_with_done_are_kept() {
    let body = sse(&[
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc", "call_id": "c1", "name": "ls", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc", "output_index": 0, "arguments": "{\"path\":\".\"}"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "id": "fc", "call_id": "c1", "name": "ls", "arguments": "{\"path\":\".\"}"}}),
        completed("completed", json!({})),
    ]);
    assert_eq!(
        terminal(&body).message.content,
        vec![ContentBlock::ToolCall { id: "c1".into(), name: "ls".into(), arguments: json!({"path": "."}) }]
    );
}

#[test]
fn refusals_incomplete_answers_and_failures_end_as_the_api_says() {
    let refusal = sse(&[
        json!({"type": "response.refusal.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": "I can't."}),
        completed("completed", json!({})),
    ]);
    let t = terminal(&refusal);
    assert_eq!((t.stop_reason, t.message.text()), (StopReason::Refusal, "I can't.".to_string()));
    for (reason, stop) in [("max_output_tokens", StopReason::MaxTokens), ("content_filter", StopReason::Refusal)] {
        let body = sse(&[
            json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": "x"}),
            completed("incomplete", json!({"incomplete_details": {"reason": reason}})),
        ]);
        assert_eq!(terminal(&body).stop_reason, stop, "{reason}");
    }
    let failed = sse(&[json!({"type": "response.failed", "response": {"id": "r", "status": "failed",
        "error": {"code": "rate_limit_exceeded", "message": "Rate limit reached"}}})]);
    assert_eq!(
        terminal(&failed).error,
        Some(ProviderError::Http { provider: "openai".into(), status: 429, message: "Rate limit reached".into() })
    );
    let error = sse(&[json!({"type": "error", "code": "invalid_prompt", "message": "bad prompt", "param": null})]);
    assert!(matches!(terminal(&error).error, Some(ProviderError::Http { status: 400, .. })));
    let cut = sse(&[
        json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": "x"}),
    ]);
    assert!(matches!(terminal(&cut).error, Some(ProviderError::Transport { .. })));
}

#[test]
fn unknown_deltas_are_not_read_as_reasoning() {
    let body = sse(&[
        json!({"type": "response.audio.delta", "delta": "AAAA"}),
        json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": "hi"}),
        completed("completed", json!({})),
    ]);
    assert_eq!(terminal(&body).message.content, vec![ContentBlock::text("hi")]);
}

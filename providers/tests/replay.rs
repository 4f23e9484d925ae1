//! The real providers against the fake vendor servers replaying recorded streams: what comes
//! back, and what was sent. Every request must also pass the vendor's rules (see `common::Fake`).
//!
//! Over 500 lines on purpose: one test binary for every vendor's replays, since each binary
//! links the crate and its dependencies once more.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::common;

use std::time::Duration;

use common::{Fake, JsonBody, Recorded, Reply, recorded};
use futures::StreamExt;
use serde_json::json;
use superpi_proto::{ContentBlock, Message, Role, Usage};
use superpi_providers::{
    ModelRequest, ProviderError, ProvidersConfig, RetryConfig, StopReason, StreamEvent, Terminal, ToolSpec, resolve,
    validate,
};

fn config_for(base: &str) -> ProvidersConfig {
    let mut config = ProvidersConfig {
        retry: RetryConfig { max_retries: 3, initial_backoff_ms: 5, max_backoff_ms: 50 },
        ..Default::default()
    };
    let vars = [
        ("OPENAI_API_KEY", "sk-test".to_string()),
        ("OPENAI_BASE_URL", format!("{base}/v1")),
        ("ANTHROPIC_API_KEY", "sk-ant-test".to_string()),
        ("ANTHROPIC_BASE_URL", base.to_string()),
        ("GEMINI_API_KEY", "g-test".to_string()),
        ("GEMINI_BASE_URL", base.to_string()),
    ];
    config.apply_env(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()));
    config
}

fn request(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        system: Some("Be brief.".into()),
        messages: vec![Message::user_text("hi")],
        tools: vec![ToolSpec {
            name: "ls".into(),
            description: "List a directory".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "additionalProperties": false}),
            deferred: false,
        }],
        max_tokens: Some(256),
        effort: None,
        output_schema: None,
    }
}

async fn run(model: &str, replies: Vec<Reply>) -> (Vec<StreamEvent>, Vec<Recorded>) {
    let server = Fake::start(replies).await;
    let provider = resolve(model, &config_for(&server.base)).unwrap();
    let events: Vec<StreamEvent> = provider.stream(request(model)).collect().await;
    validate(&events).unwrap_or_else(|err| panic!("{err}: {events:#?}"));
    (events, server.requests())
}

fn terminal(events: &[StreamEvent]) -> &Terminal {
    match events.last() {
        Some(StreamEvent::Done(t)) | Some(StreamEvent::Error(t)) => t,
        other => panic!("no terminal: {other:?}"),
    }
}

#[tokio::test]
async fn openai_text_with_usage() {
    let (events, sent) = run("gpt-4o-mini", vec![Reply::stream(&recorded("openai_text.sse"), 7)]).await;
    let t = terminal(&events);
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))));
    assert_eq!(t.message.content, vec![ContentBlock::text("Hello there, wörld ✓")]);
    assert_eq!(t.stop_reason, StopReason::EndTurn);
    assert_eq!(t.usage, Usage { input_tokens: 9, output_tokens: 4, ..Default::default() });
    assert_eq!(t.response_id.as_deref(), Some("chatcmpl-1"));

    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].method.as_str(), sent[0].path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(sent[0].header("authorization"), Some("Bearer sk-test"));
    let body = sent[0].body_json();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "ls");
}

#[tokio::test]
async fn openai_interleaved_tool_calls_and_reasoning() {
    let (events, _) = run("gpt-4o", vec![Reply::stream(&recorded("openai_tools_interleaved.sse"), 64)]).await;
    let t = terminal(&events);
    assert_eq!(t.stop_reason, StopReason::ToolUse);
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::Thinking { thinking: "Two tools at once.".into(), signature: None, redacted: false },
            ContentBlock::ToolCall {
                id: "call_a".into(),
                name: "bash".into(),
                arguments: json!({"command": "echo hi"})
            },
            ContentBlock::ToolCall { id: "call_b".into(), name: "ls".into(), arguments: json!({"path": "/tmp"}) },
        ]
    );
    assert_eq!(t.usage, Usage { input_tokens: 50, output_tokens: 30, ..Default::default() });
}

#[tokio::test]
async fn openai_sequential_tool_calls_stream_live() {
    let (events, _) = run("openai/any", vec![Reply::stream(&recorded("openai_tools_sequential.sse"), 1000)]).await;
    let t = terminal(&events);
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::Thinking { thinking: "Reading first.".into(), signature: None, redacted: false },
            ContentBlock::text("Let me look."),
            ContentBlock::ToolCall { id: "call_1".into(), name: "read".into(), arguments: json!({"path": "a.txt"}) },
            ContentBlock::ToolCall { id: "call_2".into(), name: "read".into(), arguments: json!({"path": "b.txt"}) },
            ContentBlock::ToolCall { id: "call_3".into(), name: "ls".into(), arguments: json!({}) },
        ]
    );
    // The first call's arguments arrive as two live deltas, not one held block.
    let first_call_deltas = events.iter().filter(|e| matches!(e, StreamEvent::ToolCallDelta { index: 2, .. })).count();
    assert_eq!(first_call_deltas, 2);
}

#[tokio::test]
async fn a_responses_model_streams_reasoning_text_and_calls_and_sends_items() {
    let (events, sent) = run("gpt-5-codex", vec![Reply::stream(&recorded("responses_tools.sse"), 11)]).await;
    let t = terminal(&events);
    assert_eq!(t.stop_reason, StopReason::ToolUse);
    assert_eq!(
        t.usage,
        Usage { input_tokens: 2048, output_tokens: 96, cached_input_tokens: 1920, cache_write_tokens: 0 }
    );
    assert!(
        matches!(&t.message.content[0], ContentBlock::Thinking { signature: Some(s), .. } if s.starts_with("openai:"))
    );
    // The call's arguments stream as they come, in two deltas.
    let deltas = events.iter().filter(|e| matches!(e, StreamEvent::ToolCallDelta { index: 2, .. })).count();
    assert_eq!(deltas, 2);
    assert_eq!((sent[0].method.as_str(), sent[0].path.as_str()), ("POST", "/v1/responses"));
    assert_eq!(sent[0].header("authorization"), Some("Bearer sk-test"));
    let body = sent[0].body_json();
    assert_eq!(body["model"], "gpt-5-codex");
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
    );
    assert_eq!(body["tools"][0]["name"], "ls");
    assert_eq!(body["max_output_tokens"], 256);
    assert_eq!(
        (body["store"].clone(), body["include"].clone()),
        (json!(false), json!(["reasoning.encrypted_content"]))
    );
}

#[tokio::test]
async fn a_failed_response_ends_with_its_code_and_a_rate_limit_is_retried() {
    let failed = |code: &str| {
        let event = json!({"type": "response.failed", "sequence_number": 1, "response": {"id": "resp_f", "status": "failed",
            "error": {"code": code, "message": format!("the response failed: {code}")}}});
        Reply::stream(format!("event: response.failed\ndata: {event}\n\n").as_bytes(), 64)
    };
    let replies = vec![failed("rate_limit_exceeded"), Reply::stream(&recorded("responses_tools.sse"), 500)];
    let (events, sent) = run("gpt-5-codex", replies).await;
    assert_eq!(sent.len(), 2);
    assert!(events.iter().any(|e| matches!(e, StreamEvent::Reset { .. })), "{events:?}");
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))));
    let (events, _) = run("gpt-5-codex", vec![failed("server_error")]).await;
    assert_eq!(
        terminal(&events).error,
        Some(ProviderError::Http {
            provider: "openai".into(),
            status: 500,
            message: "the response failed: server_error".into()
        })
    );
}

#[tokio::test]
async fn anthropic_thinking_text_and_tool_use() {
    let (events, sent) = run("claude-sonnet-4-5", vec![Reply::stream(&recorded("anthropic_tools.sse"), 13)]).await;
    let t = terminal(&events);
    assert_eq!(t.stop_reason, StopReason::ToolUse);
    assert_eq!(t.response_id.as_deref(), Some("msg_01"));
    // Anthropic's input leaves out what the cache served: the usage's input holds it.
    assert_eq!(t.usage, Usage { input_tokens: 30, output_tokens: 89, cached_input_tokens: 5, cache_write_tokens: 0 });
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::Thinking {
                thinking: "I should list the files.".into(),
                signature: Some("EqQBCgIYAhIM".into()),
                redacted: false
            },
            ContentBlock::text("Listing files."),
            ContentBlock::ToolCall { id: "toolu_01".into(), name: "ls".into(), arguments: json!({"path": "/tmp"}) },
        ]
    );
    assert_eq!(sent[0].path, "/v1/messages");
    assert_eq!(sent[0].header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent[0].header("anthropic-version"), Some("2023-06-01"));
    let body = sent[0].body_json();
    // Cache breakpoints on the system prompt (a block list for it), the last tool and the prompt.
    let breakpoint = json!({"type": "ephemeral"});
    assert_eq!(body["system"], json!([{"type": "text", "text": "Be brief.", "cache_control": breakpoint}]));
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": breakpoint}]}])
    );
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(body["tools"].as_array().and_then(|t| t.last()).unwrap()["cache_control"], breakpoint);
}

#[tokio::test]
async fn gemini_thoughts_text_and_function_call() {
    let (events, sent) = run("gemini-2.5-flash", vec![Reply::stream(&recorded("gemini_tools.sse"), 5)]).await;
    let t = terminal(&events);
    assert_eq!(t.stop_reason, StopReason::ToolUse);
    assert_eq!(t.response_id.as_deref(), Some("resp-g1"));
    assert_eq!(t.usage, Usage { input_tokens: 10, output_tokens: 12, ..Default::default() });
    let call_id = match &t.message.content[3] {
        ContentBlock::ToolCall { id, .. } => id.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::Thinking { thinking: "Considering the files".into(), signature: None, redacted: false },
            ContentBlock::text("I will list them."),
            ContentBlock::Thinking {
                thinking: String::new(),
                signature: Some("gemini:c2lnbmF0dXJl".into()),
                redacted: false
            },
            ContentBlock::ToolCall { id: call_id.clone(), name: "ls".into(), arguments: json!({"path": "/tmp"}) },
        ]
    );
    // Gemini gives no id: one is made from the response id.
    assert_eq!(call_id, "ls_resp-g1_1");
    assert_eq!(sent[0].path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    assert_eq!(sent[0].header("x-goog-api-key"), Some("g-test"));
    let body = sent[0].body_json();
    assert_eq!(body["systemInstruction"], json!({"parts": [{"text": "Be brief."}]}));
    assert_eq!(body["contents"], json!([{"role": "user", "parts": [{"text": "hi"}]}]));
    let parameters = &body["tools"][0]["functionDeclarations"][0]["parameters"];
    assert_eq!(parameters["type"], "object");
    assert!(parameters.get("additionalProperties").is_none(), "{parameters}");
}

#[tokio::test]
async fn retries_429_and_503_then_succeeds() {
    let replies = vec![
        Reply::error(429, r#"{"error":{"message":"Rate limit reached"}}"#).header("retry-after-ms", "20"),
        Reply::error(503, "overloaded").header("retry-after", "0"),
        Reply::stream(&recorded("openai_text.sse"), 100),
    ];
    let (events, sent) = run("gpt-4o-mini", replies).await;
    let resets: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reset { retry_in_ms } => Some(*retry_in_ms),
            _ => None,
        })
        .collect();
    assert_eq!(resets, vec![20, 0]);
    assert_eq!(sent.len(), 3);
    assert_eq!(terminal(&events).message.text(), "Hello there, wörld ✓");
}

#[tokio::test]
async fn retry_after_is_capped_and_attempts_bounded() {
    let replies = vec![
        Reply::error(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            .header("retry-after", "3600"),
        Reply::error(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
        Reply::error(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
        Reply::error(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
    ];
    let (events, sent) = run("claude-haiku-4-5", replies).await;
    assert_eq!(sent.len(), 4, "one attempt and three retries");
    assert!(events.contains(&StreamEvent::Reset { retry_in_ms: 50 }), "capped at max_backoff_ms: {events:?}");
    let t = terminal(&events);
    assert_eq!(
        t.error,
        Some(ProviderError::Http { provider: "anthropic".into(), status: 529, message: "Overloaded".into() })
    );
}

#[tokio::test]
async fn http_500_ends_with_the_providers_message() {
    let body =
        r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#;
    let (events, sent) = run("gpt-4o-mini", vec![Reply::error(500, body)]).await;
    assert_eq!(sent.len(), 1, "500 is not retried");
    assert_eq!(events.len(), 2, "Start then the error terminal: {events:?}");
    let t = terminal(&events);
    assert_eq!(t.stop_reason, StopReason::Error);
    assert_eq!(
        t.error,
        Some(ProviderError::Http {
            provider: "openai".into(),
            status: 500,
            message: "The server had an error while processing your request.".into()
        })
    );
}

#[tokio::test]
async fn a_cut_stream_keeps_the_blocks_closed_so_far() {
    let body = recorded("anthropic_tools.sse");
    let text = String::from_utf8(body.clone()).unwrap();
    // Cut in the middle of the text block, after the thinking block closed.
    let cut_at = text.rfind("files.").unwrap();
    let reply = Reply { cut: true, ..Reply::stream(&body[..cut_at], 50) };
    let (events, _) = run("claude-sonnet-4-5", vec![reply]).await;
    let t = terminal(&events);
    assert!(matches!(events.last(), Some(StreamEvent::Error(_))));
    assert!(matches!(t.error, Some(ProviderError::Transport { .. })), "{:?}", t.error);
    assert_eq!(
        t.message.content,
        vec![ContentBlock::Thinking {
            thinking: "I should list the files.".into(),
            signature: Some("EqQBCgIYAhIM".into()),
            redacted: false
        }]
    );
}

#[tokio::test]
async fn a_stream_that_ends_early_is_an_error() {
    let body = recorded("openai_text.sse");
    let text = String::from_utf8(body.clone()).unwrap();
    let clean_end = text.find(" there").unwrap();
    let (events, _) = run("gpt-4o-mini", vec![Reply::stream(&body[..clean_end], 40)]).await;
    let t = terminal(&events);
    assert!(matches!(&t.error, Some(ProviderError::Transport { message, .. }) if message.contains("before")), "{t:?}");
}

#[tokio::test]
async fn a_chunk_that_is_not_json_is_a_protocol_error() {
    let mut body = recorded("openai_text.sse");
    let at = String::from_utf8(body.clone()).unwrap().find("data: {\"id\":\"chatcmpl-1\"").unwrap();
    let tail = body.split_off(at);
    body.extend_from_slice(b"data: {this is not json\n\n");
    body.extend_from_slice(&tail);
    let (events, _) = run("gpt-4o-mini", vec![Reply::stream(&body, 30)]).await;
    let t = terminal(&events);
    assert!(matches!(&t.error, Some(ProviderError::Protocol { provider, .. }) if provider == "openai"), "{t:?}");
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_with_its_message() {
    // A non-retryable error event (an invalid request) ends the stream at once; this one is
    // Anthropic's refusal of a prompt longer than the window, told apart as such.
    let body = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long\"}}\n\n",
    );
    let (events, _) = run("claude-sonnet-4-5", vec![Reply::stream(body.as_bytes(), 16)]).await;
    let t = terminal(&events);
    assert_eq!(
        t.error,
        Some(ProviderError::ContextOverflow {
            provider: "anthropic".into(),
            status: 400,
            message: "prompt is too long".into(),
            window: None,
            requested: None
        })
    );
    assert_eq!(t.response_id.as_deref(), Some("msg_2"));
}

#[tokio::test]
async fn refused_connection_still_starts_then_fails() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let provider = resolve("gpt-4o-mini", &config_for(&base)).unwrap();
    let events: Vec<StreamEvent> = provider.stream(request("gpt-4o-mini")).collect().await;
    validate(&events).unwrap();
    assert!(matches!(events[0], StreamEvent::Start { .. }));
    assert!(matches!(terminal(&events).error, Some(ProviderError::Transport { .. })));
}

#[tokio::test]
async fn dropping_the_stream_drops_the_connection() {
    let body = recorded("openai_text.sse");
    let first_text = String::from_utf8(body.clone()).unwrap().find("data: {\"id\":\"chatcmpl-1\"").unwrap();
    let second = String::from_utf8(body.clone()).unwrap()[first_text + 10..].find("data: ").unwrap() + first_text + 10;
    let third = String::from_utf8(body.clone()).unwrap()[second + 10..].find("data: ").unwrap() + second + 10;
    let reply = Reply { hold: true, ..Reply::stream(&body[..third], 1000) };
    let server = Fake::start(vec![reply]).await;
    let provider = resolve("gpt-4o-mini", &config_for(&server.base)).unwrap();
    let mut stream = provider.stream(request("gpt-4o-mini"));
    loop {
        match stream.next().await {
            Some(StreamEvent::TextDelta { .. }) => break,
            Some(event) => assert!(!event.is_terminal(), "{event:?}"),
            None => panic!("the stream ended"),
        }
    }
    drop(stream);
    tokio::time::timeout(Duration::from_secs(10), server.client_gone.notified())
        .await
        .expect("the server saw the connection close after the stream was dropped");
}

#[tokio::test]
async fn a_conversation_switching_providers_is_sent_in_each_format() {
    let encrypted = superpi_providers::testing::rules::responses::encrypted_reasoning("rs_1");
    let history = vec![
        Message::user_text("list /tmp"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking { thinking: "plan".into(), signature: Some("sig".into()), redacted: false },
                ContentBlock::Thinking {
                    thinking: "reasoned".into(),
                    signature: Some(format!("openai:{encrypted}")),
                    redacted: false,
                },
                ContentBlock::text("Listing."),
                ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: Some("gemini:gsig".into()),
                    redacted: false,
                },
                ContentBlock::ToolCall { id: "call:1".into(), name: "ls".into(), arguments: json!({"path": "/tmp"}) },
            ],
            usage: None,
            stop_reason: Some("tool_use".into()),
        },
        Message {
            role: Role::Tool,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: "call:1".into(),
                name: "ls".into(),
                output: "a.txt".into(),
                is_error: false,
                structured: None,
                details: None,
            }],
            usage: None,
            stop_reason: None,
        },
    ];
    let replies = vec![
        Reply::stream(&recorded("openai_text.sse"), 1000),
        Reply::stream(&recorded("anthropic_tools.sse"), 1000),
        Reply::stream(&recorded("gemini_tools.sse"), 1000),
        Reply::stream(&recorded("responses_tools.sse"), 1000),
    ];
    let server = Fake::start(replies).await;
    let config = config_for(&server.base);
    for model in ["gpt-4o", "claude-sonnet-4-5", "gemini-2.5-pro", "gpt-5-codex"] {
        let request = ModelRequest { model: model.into(), messages: history.clone(), ..Default::default() };
        let events: Vec<StreamEvent> = resolve(model, &config).unwrap().stream(request).collect().await;
        validate(&events).unwrap();
    }
    let sent = server.requests();
    assert_eq!(
        sent[0].body_json()["messages"],
        json!([
            {"role": "user", "content": "list /tmp"},
            {"role": "assistant", "content": "Listing.", "tool_calls": [
                {"id": "call:1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\"/tmp\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call:1", "content": "a.txt"},
        ])
    );
    assert_eq!(
        sent[1].body_json()["messages"],
        json!([
            // The last two user turns are cache breakpoints.
            {"role": "user", "content": [{"type": "text", "text": "list /tmp", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig"},
                {"type": "text", "text": "Listing."},
                // `:` is not taken: cleaned, with a hash of the original so ids never collide.
                {"type": "tool_use", "id": "call_1_5da20468", "name": "ls", "input": {"path": "/tmp"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1_5da20468", "content": "a.txt", "is_error": false,
                 "cache_control": {"type": "ephemeral"}}
            ]},
        ])
    );
    assert_eq!(
        sent[2].body_json()["contents"],
        json!([
            {"role": "user", "parts": [{"text": "list /tmp"}]},
            {"role": "model", "parts": [
                {"text": "Listing."},
                {"functionCall": {"name": "ls", "args": {"path": "/tmp"}}, "thoughtSignature": "gsig"},
            ]},
            {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "a.txt"}}}]},
        ])
    );
    // Only the Responses API gets its reasoning back, before what it led to.
    assert_eq!(
        sent[3].body_json()["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list /tmp"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "reasoned"}], "encrypted_content": encrypted},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]},
            {"type": "function_call", "call_id": "call:1", "name": "ls", "arguments": "{\"path\":\"/tmp\"}"},
            {"type": "function_call_output", "call_id": "call:1", "output": "a.txt"},
        ])
    );
}

#[tokio::test]
async fn an_auth_command_token_is_sent_as_bearer_and_reused() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use futures::FutureExt;
    use superpi_providers::CommandRunner;

    let server = Fake::start(vec![
        Reply::stream(&recorded("openai_text.sse"), 100),
        Reply::stream(&recorded("openai_text.sse"), 100),
    ])
    .await;
    let runs = Arc::new(AtomicU32::new(0));
    let counter = runs.clone();
    let runner = CommandRunner::new(move |argv, _timeout| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok(format!("token-from-{}\n", argv.join("-"))) }.boxed()
    });
    let mut config = config_for(&server.base).with_command_runner(runner);
    config.openai.api_key = None;
    config.openai.auth_command = Some(vec!["print".into(), "token".into()]);
    let provider = resolve("gpt-4o-mini", &config).unwrap();
    for _ in 0..2 {
        let events: Vec<StreamEvent> = provider.stream(request("gpt-4o-mini")).collect().await;
        assert!(matches!(events.last(), Some(StreamEvent::Done(_))), "{events:?}");
    }
    let sent = server.requests();
    assert!(sent.iter().all(|r| r.header("authorization") == Some("Bearer token-from-print-token")));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the token is cached between requests");
}

#[tokio::test]
async fn an_overload_inside_the_stream_is_retried_with_a_reset() {
    let overloaded = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_x\",\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"void\"}}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let replies = vec![Reply::stream(overloaded.as_bytes(), 64), Reply::stream(&recorded("anthropic_tools.sse"), 500)];
    let (events, sent) = run("claude-sonnet-4-5", replies).await;
    assert_eq!(sent.len(), 2);
    let reset_at = events.iter().position(|e| matches!(e, StreamEvent::Reset { .. })).expect("a reset");
    assert!(events[..reset_at].contains(&StreamEvent::TextDelta { index: 0, delta: "void".into() }));
    let t = terminal(&events);
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))));
    assert_eq!(t.message.content.len(), 3, "only the second attempt's blocks: {:?}", t.message.content);
    assert_eq!(t.response_id.as_deref(), Some("msg_01"), "the second attempt's id");
}

#[tokio::test]
async fn a_thinking_budget_turns_on_extended_thinking() {
    let server = Fake::start(vec![
        Reply::stream(&recorded("anthropic_tools.sse"), 1000),
        Reply::stream(&recorded("gemini_tools.sse"), 1000),
    ])
    .await;
    let mut config = config_for(&server.base);
    config.anthropic.thinking_budget = Some(4000);
    config.gemini.thinking_budget = Some(2048);
    for model in ["claude-sonnet-4-5", "gemini-2.5-flash"] {
        let events: Vec<StreamEvent> = resolve(model, &config).unwrap().stream(request(model)).collect().await;
        validate(&events).unwrap();
    }
    let sent = server.requests();
    let anthropic = sent[0].body_json();
    assert_eq!(anthropic["thinking"], json!({"type": "enabled", "budget_tokens": 4000}));
    assert_eq!(anthropic["max_tokens"], 5024, "room for the answer beside the budget");
    let gemini = sent[1].body_json();
    assert_eq!(gemini["generationConfig"]["thinkingConfig"], json!({"includeThoughts": true, "thinkingBudget": 2048}));
}

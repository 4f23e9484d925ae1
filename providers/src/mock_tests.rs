use std::time::Instant;

use futures::StreamExt;
use serde_json::json;
use superpi_proto::{ContentBlock, Message, Role};

use super::*;
use crate::validate::{Validator, validate};

fn user(text: &str) -> Message {
    Message::user_text(text)
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest { model: "mock".into(), messages, ..Default::default() }
}

async fn collect(request: ModelRequest) -> Vec<StreamEvent> {
    MockProvider::new().stream(request).collect().await
}

fn terminal(events: &[StreamEvent]) -> &crate::Terminal {
    match events.last() {
        Some(StreamEvent::Done(t)) | Some(StreamEvent::Error(t)) => t,
        other => panic!("no terminal: {other:?}"),
    }
}

#[tokio::test]
async fn echoes_text_word_by_word() {
    let events = collect(request(vec![user("hello there, mock model")])).await;
    validate(&events).unwrap();
    assert_eq!(events[0], StreamEvent::Start { response_id: Some("mock-1".into()) });
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, vec!["hello ", "there, ", "mock ", "model"]);
    let t = terminal(&events);
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))));
    assert_eq!(t.stop_reason, StopReason::EndTurn);
    assert_eq!(t.message.content, vec![ContentBlock::text("hello there, mock model")]);
    assert_eq!(t.message.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(t.usage.output_tokens, 4);
}

#[tokio::test]
async fn same_request_same_events() {
    let req = request(vec![user("@think hmm\nsome words here\n@tool ls {\"path\":\".\"}")]);
    assert_eq!(collect(req.clone()).await, collect(req).await);
}

#[tokio::test]
async fn reads_only_the_last_user_message() {
    let events = collect(request(vec![
        user("@fail no"),
        Message { role: Role::Assistant, content: vec![ContentBlock::text("ok")], usage: None, stop_reason: None },
        user("second"),
    ]))
    .await;
    validate(&events).unwrap();
    assert_eq!(terminal(&events).message.text(), "second");
}

#[tokio::test]
async fn tool_lines_make_several_calls() {
    let events =
        collect(request(vec![user("@tool bash {\"command\":\"echo hi\"}\n@tool ls {\"path\":\"/tmp\"}\n@tool read")]))
            .await;
    validate(&events).unwrap();
    let t = terminal(&events);
    assert_eq!(t.stop_reason, StopReason::ToolUse);
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::ToolCall {
                id: "call_1".into(),
                name: "bash".into(),
                arguments: json!({"command": "echo hi"})
            },
            ContentBlock::ToolCall { id: "call_2".into(), name: "ls".into(), arguments: json!({"path": "/tmp"}) },
            ContentBlock::ToolCall { id: "call_3".into(), name: "read".into(), arguments: json!({}) },
        ]
    );
}

#[tokio::test]
async fn tool_ids_stay_unique_across_the_conversation() {
    let earlier = Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::ToolCall { id: "call_1".into(), name: "ls".into(), arguments: json!({}) },
            ContentBlock::ToolCall { id: "call_2".into(), name: "ls".into(), arguments: json!({}) },
        ],
        usage: None,
        stop_reason: None,
    };
    let events = collect(request(vec![user("first"), earlier, user("@tool ls {}")])).await;
    let t = terminal(&events);
    assert!(matches!(&t.message.content[0], ContentBlock::ToolCall { id, .. } if id == "call_3"));
}

fn tool_result(id: &str, name: &str, output: &str) -> Message {
    Message {
        role: Role::Tool,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: id.into(),
            name: name.into(),
            output: output.into(),
            is_error: false,
            structured: None,
            details: None,
        }],
        usage: None,
        stop_reason: None,
    }
}

#[tokio::test]
async fn answers_tool_results_quoting_200_characters() {
    let long = "a".repeat(300);
    let call = Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::ToolCall { id: "call_1".into(), name: "bash".into(), arguments: json!({}) },
            ContentBlock::ToolCall { id: "call_2".into(), name: "ls".into(), arguments: json!({}) },
        ],
        usage: None,
        stop_reason: None,
    };
    let events = collect(request(vec![
        user("@tool bash {}\n@tool ls {}"),
        call,
        tool_result("call_1", "bash", "hi from bash"),
        tool_result("call_2", "ls", &long),
    ]))
    .await;
    validate(&events).unwrap();
    let t = terminal(&events);
    assert_eq!(t.stop_reason, StopReason::EndTurn);
    let text = t.message.text();
    assert!(text.contains("hi from bash"), "{text}");
    assert!(text.contains(&"a".repeat(200)), "{text}");
    assert!(!text.contains(&"a".repeat(201)), "{text}");
    assert!(text.find("bash").unwrap() < text.find(" ls ").unwrap(), "results in order: {text}");
    assert!(t.message.content.iter().all(|b| !matches!(b, ContentBlock::ToolCall { .. })));
}

#[tokio::test]
async fn think_adds_a_thinking_block_first() {
    let events = collect(request(vec![user("@think let me see\nanswer")])).await;
    validate(&events).unwrap();
    assert!(matches!(events[1], StreamEvent::ThinkingStart { index: 0 }));
    let t = terminal(&events);
    assert_eq!(
        t.message.content,
        vec![
            ContentBlock::Thinking { thinking: "let me see".into(), signature: None, redacted: false },
            ContentBlock::text("answer"),
        ]
    );
}

#[tokio::test]
async fn slow_paces_the_deltas() {
    let started = Instant::now();
    let events = collect(request(vec![user("@slow 30\none two three")])).await;
    validate(&events).unwrap();
    assert!(started.elapsed().as_millis() >= 90, "three deltas at 30 ms: {:?}", started.elapsed());
    assert_eq!(terminal(&events).message.text(), "one two three");
}

#[tokio::test]
async fn fail_ends_with_an_error_terminal_keeping_closed_blocks() {
    let events = collect(request(vec![user("partial answer\n@fail the model broke")])).await;
    validate(&events).unwrap();
    let Some(StreamEvent::Error(t)) = events.last() else { panic!("{events:?}") };
    assert_eq!(t.stop_reason, StopReason::Error);
    assert_eq!(t.error, Some(ProviderError::Model { message: "the model broke".into() }));
    assert_eq!(t.message.text(), "partial answer");
}

#[tokio::test]
async fn bad_directives_fail_with_a_message() {
    for prompt in ["@tool ls {not json", "@slow soon", "@deltas many", "@tool"] {
        let events = collect(request(vec![user(prompt)])).await;
        validate(&events).unwrap();
        let Some(StreamEvent::Error(t)) = events.last() else { panic!("{prompt}: {events:?}") };
        assert!(matches!(&t.error, Some(ProviderError::Model { message }) if message.starts_with("mock:")), "{t:?}");
    }
}

#[tokio::test]
async fn deltas_streams_n_deltas_lazily() {
    let mut stream = MockProvider::new().stream(request(vec![user("@deltas 100000")]));
    let mut validator = Validator::new();
    let mut deltas = 0u64;
    let mut last = None;
    while let Some(event) = stream.next().await {
        validator.push(&event).unwrap();
        if matches!(event, StreamEvent::TextDelta { .. }) {
            deltas += 1;
        }
        last = Some(event);
    }
    validator.finish().unwrap();
    assert_eq!(deltas, 100_000);
    let Some(StreamEvent::Done(t)) = last else { panic!() };
    assert_eq!(t.message.text().len(), 100_000);
}

#[tokio::test]
async fn empty_prompt_still_answers() {
    let events = collect(request(vec![user("")])).await;
    validate(&events).unwrap();
    assert!(terminal(&events).message.text().contains("nothing to answer"));
    let events = collect(request(vec![])).await;
    validate(&events).unwrap();
}

#[test]
fn help_names_every_directive() {
    for directive in ["@tool", "@think", "@slow", "@fail", "@deltas", "@system"] {
        assert!(mock_directives_help().contains(directive));
    }
}

#[tokio::test]
async fn counts_its_input_and_refuses_a_request_over_its_window() {
    let fits = request(vec![user("a short prompt")]);
    let input = crate::tokens::request(&fits);
    let limits = ModelLimits { context_window: input, max_output_tokens: 100 };
    let events: Vec<StreamEvent> = MockProvider::with_limits(limits).stream(fits.clone()).collect().await;
    validate(&events).unwrap();
    let done = terminal(&events);
    assert_eq!((done.stop_reason, done.usage.input_tokens), (StopReason::EndTurn, input));

    let over = request(vec![user("a short prompt, and one word more")]);
    let events: Vec<StreamEvent> = MockProvider::with_limits(limits).stream(over.clone()).collect().await;
    validate(&events).unwrap();
    let refused = terminal(&events);
    assert!(refused.message.content.is_empty());
    let requested = crate::tokens::request(&over);
    let message = format!("the request holds {requested} tokens, more than the context window of {input} tokens");
    assert_eq!(
        refused.error,
        Some(ProviderError::ContextOverflow {
            provider: "mock".into(),
            status: 400,
            message,
            window: Some(input),
            requested: Some(requested)
        })
    );
}

#[tokio::test]
async fn system_echoes_the_end_of_the_system_prompt() {
    let mut req = request(vec![user("@system")]);
    req.system = Some("You are superpi.\n\nAnswer in French.".into());
    let events = collect(req).await;
    assert_eq!(terminal(&events).message.content, vec![ContentBlock::text("Answer in French.")]);
}

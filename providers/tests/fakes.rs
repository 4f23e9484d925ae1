//! The fake vendor servers: scripted answers reach the providers intact in each vendor's
//! format, and a request that breaks a vendor rule gets the vendor's own error.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use superpi_proto::{ContentBlock, Message};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, GeminiFake, OpenAiFake, ResponsesFake};
use superpi_providers::{ModelRequest, ProviderError, ProvidersConfig, StreamEvent, ToolSpec, resolve, validate};

fn config(fake: &FakeServer) -> ProvidersConfig {
    let vars = fake.env();
    let mut config = ProvidersConfig::default();
    config.apply_env(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()));
    config
}

async fn ask(fake: &FakeServer, model: &str, messages: Vec<Message>) -> superpi_providers::Terminal {
    let request = ModelRequest {
        model: model.into(),
        messages,
        tools: vec![ToolSpec {
            name: "ls".into(),
            description: "List".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            deferred: false,
        }],
        max_tokens: Some(100),
        ..Default::default()
    };
    let events: Vec<StreamEvent> = resolve(model, &config(fake)).unwrap().stream(request).collect().await;
    validate(&events).unwrap();
    match events.into_iter().last() {
        Some(StreamEvent::Done(t)) | Some(StreamEvent::Error(t)) => t,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn scripted_answers_stream_in_each_vendors_format() {
    // Arguments whose middle byte is inside a character: the fake cuts its two deltas at a boundary.
    let script = || vec![Answer::text("two words"), Answer::tool_call("ls", json!({"path": "ééééé"}))];
    let fakes = [
        (OpenAiFake::start(script()).await.unwrap(), "gpt-4o"),
        (AnthropicFake::start(script()).await.unwrap(), "claude-sonnet-4-5"),
        (GeminiFake::start(script()).await.unwrap(), "gemini-2.5-flash"),
        (ResponsesFake::start(script()).await.unwrap(), "gpt-5-codex"),
    ];
    for (fake, model) in &fakes {
        let first = ask(fake, model, vec![Message::user_text("hi")]).await;
        assert_eq!(first.message.text(), "two words", "{model}");
        let second = ask(fake, model, vec![Message::user_text("list")]).await;
        let calls: Vec<(&str, &Value)> = second
            .message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall { name, arguments, .. } => Some((name.as_str(), arguments)),
                _ => None,
            })
            .collect();
        assert_eq!(calls, vec![("ls", &json!({"path": "ééééé"}))], "{model}");
        assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
        assert_eq!(fake.accepted().len(), 2);
        assert!(fake.wait_for_requests(2, Duration::from_secs(5)).await);
    }
}

async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut request =
        reqwest::Client::new().post(url).header("content-type", "application/json").body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), serde_json::from_str(&response.text().await.unwrap()).unwrap())
}

#[tokio::test]
async fn broken_rules_get_the_vendors_error() {
    let openai = OpenAiFake::start(vec![]).await.unwrap();
    let body = json!({"model": "gpt-4o", "stream": true, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "user", "content": "and?"}]});
    let url = format!("{}/chat/completions", openai.base_url(superpi_providers::testing::rules::Vendor::Openai));
    let (status, error) = post(&url, &[("authorization", "Bearer k")], &body).await;
    assert_eq!(status, 400);
    assert!(error["error"]["message"].as_str().unwrap().contains("did not have response messages: call_1"), "{error}");
    let (status, _) =
        post(&url, &[], &json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(status, 401, "no key");
    assert_eq!(openai.rejections().len(), 2);

    let anthropic = AnthropicFake::start(vec![]).await.unwrap();
    let url = format!("{}/v1/messages", anthropic.base);
    let headers = [("x-api-key", "k"), ("anthropic-version", "2023-06-01")];
    let (status, error) =
        post(&url, &headers, &json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}))
            .await;
    assert_eq!((status, error["type"].as_str()), (400, Some("error")));
    assert_eq!(error["error"]["message"], "max_tokens: Field required");

    let gemini = GeminiFake::start(vec![]).await.unwrap();
    let url = format!("{}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", gemini.base);
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations": [
        {"name": "bash", "description": "d", "parameters": {"type": "object", "properties": {"timeout": {"type": "number", "exclusiveMinimum": 0}}}}]}]});
    let (status, error) = post(&url, &[("x-goog-api-key", "k")], &body).await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(
        error["error"]["message"],
        "Invalid JSON payload received. Unknown name \"exclusiveMinimum\" at 'tools[0].function_declarations[0].parameters.properties[timeout].value': Cannot find field."
    );
}

#[tokio::test]
async fn a_refused_request_ends_the_stream_with_the_vendors_message() {
    let fake = OpenAiFake::start(vec![]).await.unwrap();
    // OPENAI_BASE_URL without its `/v1`: the API answers 404 for the path.
    let mut config = config(&fake);
    config.openai.base_url = Some(fake.base.clone());
    let events: Vec<StreamEvent> = resolve("gpt-4o", &config)
        .unwrap()
        .stream(ModelRequest { model: "gpt-4o".into(), messages: vec![Message::user_text("hi")], ..Default::default() })
        .collect()
        .await;
    match events.last() {
        Some(StreamEvent::Error(t)) => assert_eq!(
            t.error,
            Some(ProviderError::Http {
                provider: "openai".into(),
                status: 404,
                message: "Invalid URL (POST /chat/completions)".into()
            })
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.rejections().len(), 1);
}

#[tokio::test]
async fn a_tool_offered_under_a_cleaned_name_is_called_under_its_own() {
    for (fake, model, wire) in [
        (OpenAiFake::start(vec![]).await.unwrap(), "gpt-4o", "mcp_server_search_files"),
        (AnthropicFake::start(vec![]).await.unwrap(), "claude-sonnet-4-5", "mcp_server_search_files"),
        (GeminiFake::start(vec![]).await.unwrap(), "gemini-2.5-flash", "mcp.server_search_files"),
    ] {
        fake.push(Answer::tool_call(wire, json!({"q": "x"})));
        let request = ModelRequest {
            model: model.into(),
            messages: vec![Message::user_text("search")],
            tools: vec![ToolSpec {
                name: "mcp.server/search files".into(),
                description: "Search".into(),
                input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                deferred: false,
            }],
            ..Default::default()
        };
        let events: Vec<StreamEvent> = resolve(model, &config(&fake)).unwrap().stream(request).collect().await;
        validate(&events).unwrap();
        let sent = fake.accepted().pop().unwrap().to_string();
        assert!(sent.contains(&format!("\"{wire}\"")), "{model}: offered as {wire}: {sent}");
        let ends: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallEnd { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ends, vec!["mcp.server/search files"], "{model}");
        let Some(StreamEvent::Done(t)) = events.last() else { panic!("{events:?}") };
        assert!(
            matches!(&t.message.content[0], ContentBlock::ToolCall { name, .. } if name == "mcp.server/search files"),
            "{model}: {:?}",
            t.message.content
        );
    }
}

/// A responder picks the answer from the request (here: from its last message), before the
/// script; a held answer streams its text and then stays open, without an end, until the
/// client goes away.
#[tokio::test]
async fn a_responder_answers_from_the_request_and_a_held_answer_stays_open() {
    use superpi_providers::testing::rules::Vendor;
    let fakes = [
        (OpenAiFake::start(vec![]).await.unwrap(), "gpt-4o"),
        (AnthropicFake::start(vec![]).await.unwrap(), "claude-sonnet-4-5"),
        (GeminiFake::start(vec![]).await.unwrap(), "gemini-2.5-flash"),
    ];
    for (fake, model) in &fakes {
        fake.set_responder(Box::new(|vendor: Vendor, body: &Value| {
            let text = body.to_string();
            if text.contains("hold on") {
                Some(Answer::Held("partial words".into()))
            } else {
                Some(Answer::text(format!("{} saw it", vendor.as_str())))
            }
        }));
        let answered = ask(fake, model, vec![Message::user_text("hi")]).await;
        assert!(answered.message.text().ends_with(" saw it"), "{model}: {}", answered.message.text());

        let request = ModelRequest {
            model: (*model).into(),
            messages: vec![Message::user_text("hold on")],
            max_tokens: Some(100),
            ..Default::default()
        };
        let mut stream = resolve(model, &config(fake)).unwrap().stream(request);
        let mut text = String::new();
        while !text.contains("partial") {
            match tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("a delta in time") {
                Some(StreamEvent::TextDelta { delta, .. }) => text.push_str(&delta),
                Some(StreamEvent::Done(t)) | Some(StreamEvent::Error(t)) => {
                    panic!("{model}: the held stream ended: {t:?}")
                }
                Some(_) => {}
                None => panic!("{model}: the held stream ended"),
            }
        }
        drop(stream);
        tokio::time::timeout(Duration::from_secs(10), fake.client_gone.notified())
            .await
            .unwrap_or_else(|_| panic!("{model}: the fake did not notice the client leaving"));
    }
}

/// A Responses-only model through the Responses wire: the reasoning item of an answer goes
/// back whole with the next request (the fake verifies it), and the second request's prefix,
/// sent under the same `prompt_cache_key`, is reported read from the cache.
#[tokio::test]
async fn a_responses_model_gets_its_reasoning_back_and_its_prefix_cached() {
    let fake =
        ResponsesFake::start(vec![Answer::tool_call("ls", json!({"path": "."})), Answer::text("done")]).await.unwrap();
    fake.set_reasoning("Looking first.");
    let prompt = Message::user_text(format!("list the files {}", "and say what they hold ".repeat(300)));
    let first = ask(&fake, "gpt-5-codex", vec![prompt.clone()]).await;
    let (thinking, call_id) = match &first.message.content[..] {
        [ContentBlock::Thinking { thinking, signature: Some(signature), .. }, ContentBlock::ToolCall { id, .. }] => {
            assert!(signature.starts_with("openai:gAAAAA"), "{signature}");
            (thinking.clone(), id.clone())
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(thinking, "Looking first.");
    assert!(first.details.reasoning_tokens > 0 && first.usage.output_tokens > first.details.reasoning_tokens);
    assert_eq!(first.usage.cached_input_tokens, 0, "a cold cache");
    let result = Message {
        role: superpi_proto::Role::Tool,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: call_id,
            name: "ls".into(),
            output: "a.txt".into(),
            is_error: false,
            structured: None,
            details: None,
        }],
        usage: None,
        stop_reason: None,
    };
    let second = ask(&fake, "gpt-5-codex", vec![prompt, first.message.clone(), result]).await;
    assert_eq!(second.message.text(), "done");
    assert_eq!(fake.rejections(), vec![]);
    let sent = fake.accepted();
    assert_eq!(sent[1]["input"][1]["type"], "reasoning", "{}", sent[1]);
    assert_eq!(sent[0]["prompt_cache_key"], sent[1]["prompt_cache_key"]);
    let exchanges = fake.exchanges();
    assert!(second.usage.cached_input_tokens >= 1024, "{:?}", second.usage);
    assert_eq!(second.usage.cached_input_tokens, exchanges[1].cached_tokens);
    assert_eq!(second.usage.input_tokens, exchanges[1].prompt_tokens);
}

/// OpenAI refuses reasoning summaries to an organisation it has not verified; the request goes
/// again without them, once, and the turn answers.
#[tokio::test]
async fn an_unverified_organisation_still_gets_its_answer() {
    let fake = ResponsesFake::start(vec![Answer::text("answered")]).await.unwrap();
    fake.refuse_reasoning_summaries();
    let answer = ask(&fake, "o3-pro", vec![Message::user_text("hi")]).await;
    assert_eq!(answer.message.text(), "answered");
    let refused = fake.rejections();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].param.as_deref(), Some("reasoning.summary"));
    assert!(fake.accepted()[0]["reasoning"].get("summary").is_none());
}

//! The vendors' built-in tool search through the providers and the rule-enforcing fakes:
//! deferred tools go with the vendor's flag beside its search tool, the search's blocks come
//! back as hosted blocks and are sent again unchanged, a history that lost them is refused,
//! and the usage counts the deferred schemas only once a search loaded them.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use futures::StreamExt;
use serde_json::{Value, json};
use superpi_proto::{ContentBlock, Message, Role};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, ResponsesFake, counted_tokens};
use superpi_providers::{ModelRequest, ProvidersConfig, StreamEvent, Terminal, ToolSpec, resolve, validate};

fn config(fake: &FakeServer, builtin: Option<bool>) -> ProvidersConfig {
    let vars = fake.env();
    let mut config = ProvidersConfig::default();
    config.apply_env(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()));
    config.anthropic.builtin_tool_search = builtin;
    config.openai.builtin_tool_search = builtin;
    config
}

fn tool(name: &str, description: &str, deferred: bool) -> ToolSpec {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string", "description": "A city name"}}});
    ToolSpec { name: name.into(), description: description.into(), input_schema: schema, deferred }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        tool("ls", "List a directory", false),
        tool("get_weather", "The weather forecast of a city", true),
        tool("get_time", "The local time of a city", true),
        tool("book_flight", "Book a flight to a city", true),
    ]
}

async fn ask(fake: &FakeServer, model: &str, messages: Vec<Message>) -> Terminal {
    let request =
        ModelRequest { model: model.into(), messages, tools: tools(), max_tokens: Some(100), ..Default::default() };
    let events: Vec<StreamEvent> = resolve(model, &config(fake, None)).unwrap().stream(request).collect().await;
    validate(&events).unwrap();
    match events.into_iter().last() {
        Some(StreamEvent::Done(t)) | Some(StreamEvent::Error(t)) => t,
        other => panic!("{other:?}"),
    }
}

fn hosted(message: &Message) -> Vec<Value> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Hosted { block, .. } => Some(block.clone()),
            _ => None,
        })
        .collect()
}

fn call_of(message: &Message) -> (String, String, Value) {
    message
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::ToolCall { id, name, arguments } => Some((id.clone(), name.clone(), arguments.clone())),
            _ => None,
        })
        .expect("a call")
}

/// Every value of `body` (depth first), to find the hosted blocks sent back.
fn contains(body: &Value, wanted: &Value) -> bool {
    body == wanted
        || match body {
            Value::Array(items) => items.iter().any(|v| contains(v, wanted)),
            Value::Object(map) => map.values().any(|v| contains(v, wanted)),
            _ => false,
        }
}

#[tokio::test]
async fn the_vendors_search_round_trips_and_its_blocks_must_come_back() {
    let script = || vec![Answer::tool_search("weather", "get_weather", json!({"city": "Oslo"})), Answer::text("done")];
    let fakes = [
        (AnthropicFake::start(script()).await.unwrap(), "claude-sonnet-4-5", "tool_search_tool_bm25_20251119"),
        (ResponsesFake::start(script()).await.unwrap(), "gpt-5.4-codex", "tool_search"),
    ];
    for (fake, model, search_type) in &fakes {
        assert!(resolve(model, &config(fake, None)).unwrap().tool_search(), "{model}");
        assert!(
            !resolve(model, &config(fake, Some(false))).unwrap().tool_search(),
            "{model}: the setting turns it off"
        );

        let first = ask(fake, model, vec![Message::user_text("weather in Oslo?")]).await;
        let blocks = hosted(&first.message);
        assert_eq!(blocks.len(), 2, "{model}: the search's call and result: {:?}", first.message.content);
        let (id, name, arguments) = call_of(&first.message);
        assert_eq!((name.as_str(), arguments), ("get_weather", json!({"city": "Oslo"})), "{model}");

        // The request: the search tool, each deferred tool flagged, the eager one not.
        let sent = &fake.accepted()[0];
        let listed = sent["tools"].as_array().unwrap();
        assert!(listed.iter().any(|t| t["type"] == *search_type), "{model}: {listed:?}");
        for tool in listed.iter().filter(|t| t["name"] == "get_weather" || t["name"] == "book_flight") {
            assert_eq!(tool["defer_loading"], true, "{model}: {tool}");
        }
        let ls = listed.iter().find(|t| t["name"] == "ls").unwrap();
        assert!(ls.get("defer_loading").is_none(), "{model}");
        // Usage as the vendor counts it: the deferred schemas are not in the context yet.
        let exchange = &fake.exchanges()[0];
        assert!(exchange.prompt_tokens < counted_tokens(&exchange.request.body), "{model}");

        // The next step sends the search's blocks back unchanged, and is accepted.
        let result = Message {
            role: Role::Tool,
            content: vec![ContentBlock::tool_result(id.clone(), name.clone(), "rain")],
            usage: None,
            stop_reason: None,
        };
        let history = vec![Message::user_text("weather in Oslo?"), first.message.clone(), result.clone()];
        let second = ask(fake, model, history).await;
        assert_eq!(second.message.text(), "done", "{model}: {:?}", fake.rejections());
        let resent = &fake.accepted()[1];
        for block in &blocks {
            assert!(contains(resent, block), "{model}: {block} sent back as it came");
        }
        assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
        // Loaded, the found tool counts in the context now.
        let exchange = &fake.exchanges()[1];
        let without_search = counted_tokens(&exchange.request.body);
        assert!(exchange.prompt_tokens < without_search, "{model}: the tools never found still do not count");

        // A history that lost the search's blocks (a compaction summarised them away) calls a
        // tool no search loaded, which the fake refuses (`rules/tool_search_tests.rs`): that
        // tool goes loaded, the others stay deferred.
        let mut lost = first.message.clone();
        lost.content.retain(|b| !matches!(b, ContentBlock::Hosted { .. }));
        let summary = Message::user_text("(summary) The user asked for the weather in Oslo.");
        let third = ask(fake, model, vec![summary, lost, result]).await;
        assert_eq!((third.error, fake.rejections()), (None, vec![]), "{model}");
        let sent = fake.accepted().pop().unwrap();
        let listed = sent["tools"].as_array().unwrap();
        let flag = |name: &str| listed.iter().find(|t| t["name"] == name).map(|t| t.get("defer_loading").cloned());
        assert_eq!(flag("get_weather"), Some(None), "{model}: loaded: {listed:?}");
        assert_eq!(flag("book_flight"), Some(Some(json!(true))), "{model}: still deferred");
    }
}

/// A tool that left between turns (its MCP server removed) leaves references to it in an
/// earlier search's result: they are left out of the request, which the fake (as the API)
/// refuses with a reference to a tool it was not given; the rest of the result goes unchanged.
#[tokio::test]
async fn a_reference_to_a_tool_that_left_is_not_sent() {
    let script = vec![Answer::tool_search("city", "get_weather", json!({"city": "Oslo"})), Answer::text("done")];
    let fake = AnthropicFake::start(script).await.unwrap();
    let model = "claude-sonnet-4-5";
    let first = ask(&fake, model, vec![Message::user_text("weather in Oslo?")]).await;
    let references = |body: &Value| body.to_string().matches("\"tool_reference\"").count();
    assert_eq!(references(&Value::Array(hosted(&first.message))), 3, "the search found three tools");
    let (id, name, _) = call_of(&first.message);
    let result = Message {
        role: Role::Tool,
        content: vec![ContentBlock::tool_result(id, name, "rain")],
        usage: None,
        stop_reason: None,
    };
    // `book_flight` is gone.
    let mut request = ModelRequest {
        model: model.into(),
        messages: vec![Message::user_text("weather in Oslo?"), first.message, result],
        tools: tools(),
        max_tokens: Some(100),
        ..Default::default()
    };
    request.tools.retain(|t| t.name != "book_flight");
    let mut request_again = request.clone();
    let provider = resolve(model, &config(&fake, None)).unwrap();
    let events: Vec<StreamEvent> = provider.stream(request).collect().await;
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))), "{:?}", fake.rejections());
    let sent = fake.accepted().pop().unwrap();
    assert_eq!(references(&sent["messages"]), 2, "{sent}");
    assert!(!sent["messages"].to_string().contains("book_flight"), "{sent}");

    // Every deferred tool gone (or a model without the search, later in a cascade): no search
    // tool is sent, and none of the search's blocks, which would name a tool not sent.
    request_again.tools.retain(|t| !t.deferred);
    let events: Vec<StreamEvent> = provider.stream(request_again).collect().await;
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))), "{:?}", fake.rejections());
    let sent = fake.accepted().pop().unwrap().to_string();
    assert!(!sent.contains("server_tool_use") && !sent.contains("tool_search_tool_result"), "{sent}");
    assert!(sent.contains("get_weather"), "the call stays: {sent}");
}

#[tokio::test]
async fn a_model_without_the_search_or_another_vendor_keeps_its_requests_plain() {
    let fake = AnthropicFake::start(vec![]).await.unwrap();
    assert!(!resolve("claude-opus-4-1", &config(&fake, None)).unwrap().tool_search(), "before Claude 4.5");
    let responses = ResponsesFake::start(vec![]).await.unwrap();
    assert!(!resolve("gpt-5-codex", &config(&responses, None)).unwrap().tool_search(), "before gpt-5.4");
    // Hosted blocks of one API are never sent to another.
    let foreign = Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Hosted { provider: "openai-responses".into(), block: json!({"type": "tool_search_call"}) },
            ContentBlock::text("hello"),
        ],
        usage: None,
        stop_reason: None,
    };
    let request = ModelRequest {
        model: "claude-sonnet-4-5".into(),
        messages: vec![Message::user_text("hi"), foreign, Message::user_text("again")],
        max_tokens: Some(100),
        ..Default::default()
    };
    let provider = resolve("claude-sonnet-4-5", &config(&fake, None)).unwrap();
    let events: Vec<StreamEvent> = provider.stream(request).collect().await;
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))), "{:?}", fake.rejections());
    assert!(!String::from_utf8_lossy(&fake.requests()[0].body).contains("tool_search_call"));
}

/// Anthropic pauses a long turn of its server tools with `pause_turn`: the answer is sent back
/// unchanged as the last message, nothing after it, and the model goes on where it stopped
/// (here the paused search runs, then the found tool is called). A client that puts a message
/// after the paused search is refused.
#[tokio::test]
async fn a_paused_search_goes_back_unchanged_and_last_and_the_model_goes_on() {
    let script = vec![
        Answer::Paused { query: "weather".into() },
        Answer::tool_call("get_weather", json!({"city": "Oslo"})),
        Answer::text("done"),
    ];
    let fake = AnthropicFake::start(script).await.unwrap();
    let model = "claude-sonnet-4-5";
    let prompt = Message::user_text("weather in Oslo?");
    let paused = ask(&fake, model, vec![prompt.clone()]).await;
    assert_eq!(paused.stop_reason, superpi_providers::StopReason::Paused, "{paused:?}");
    let call = hosted(&paused.message);
    assert_eq!(call.len(), 1, "the search's call, not run yet: {:?}", paused.message.content);
    assert_eq!(call[0]["type"], "server_tool_use");

    let went_on = ask(&fake, model, vec![prompt.clone(), paused.message.clone()]).await;
    assert_eq!(fake.rejections(), vec![]);
    let sent = &fake.accepted()[1];
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "no message after the paused answer: {messages:?}");
    assert_eq!(messages[1], json!({"role": "assistant", "content": call}), "sent back unchanged");
    let result = hosted(&went_on.message);
    assert_eq!(result.len(), 1, "{:?}", went_on.message.content);
    assert_eq!(
        (result[0]["type"].as_str(), result[0]["tool_use_id"].clone()),
        (Some("tool_search_tool_result"), call[0]["id"].clone())
    );
    let (id, name, _) = call_of(&went_on.message);
    assert_eq!(name, "get_weather");

    // The next step: both answers in one assistant turn, the tool loaded by the search.
    let output = Message {
        role: Role::Tool,
        content: vec![ContentBlock::tool_result(id, name, "rain")],
        usage: None,
        stop_reason: None,
    };
    let history = vec![prompt.clone(), paused.message.clone(), went_on.message.clone(), output];
    assert_eq!(ask(&fake, model, history).await.message.text(), "done", "{:?}", fake.rejections());

    // A user message after the paused search leaves it without its result: refused.
    let refused = ask(&fake, model, vec![prompt, paused.message, Message::user_text("go on")]).await;
    assert!(refused.error.is_some());
    let why = fake.rejections().pop().expect("a rejection").message;
    assert!(why.contains("without its tool_search_tool_result"), "{why}");
}

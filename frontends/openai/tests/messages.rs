//! End-to-end: `POST /v1/messages` (Anthropic Messages) of the real `superpi gateway` process,
//! on the mock model: streamed and whole answers, conversations, refusals in Anthropic's
//! shape, `x-api-key`, `count_tokens` and the models list for Anthropic clients.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Gateway, http};
use serde_json::{Value, json};
use superpi_client::KernelClient;
use superpi_proto::EventBody;

const LIMIT: Duration = Duration::from_secs(60);

async fn post_to(gw: &Gateway, path: &str, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = http()
        .post(gw.url(path))
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    tokio::time::timeout(LIMIT, req.send()).await.expect("answer in time").unwrap()
}

async fn post(gw: &Gateway, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    post_to(gw, "/v1/messages", body, headers).await
}

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")))
}

fn conversation_of(resp: &reqwest::Response) -> i64 {
    resp.headers()["x-superpi-conversation-id"].to_str().unwrap().parse().unwrap()
}

fn body(model: &str, stream: bool, prompt: &str) -> Value {
    json!({"model": model, "max_tokens": 1024, "stream": stream, "messages": [{"role": "user", "content": prompt}]})
}

/// Anthropic's error shape, with its `type` for the status.
fn assert_error(status: u16, body: &Value, want_status: u16, kind: &str) {
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

/// What a client reads from a Messages stream, checked against the API's event grammar:
/// `message_start` first, blocks numbered from 0 each started, added to and stopped in turn
/// (deltas of the block's kind), then `message_delta` and `message_stop` last; or an `error`
/// event last.
#[derive(Debug, Default)]
struct Streamed {
    names: Vec<String>,
    message: Value,
    text: String,
    thinking: String,
    error: Option<Value>,
}

fn read_stream(body: &str) -> Streamed {
    let mut out = Streamed::default();
    let mut open: Option<(u64, String)> = None;
    let mut blocks = 0;
    let frames: Vec<&str> = body.split("\n\n").filter(|f| !f.trim().is_empty()).collect();
    for (i, frame) in frames.iter().enumerate() {
        let mut lines = frame.lines();
        let name = lines.next().and_then(|l| l.strip_prefix("event: ")).unwrap_or_else(|| panic!("no event: {frame}"));
        let data: String = lines.map(|l| l.strip_prefix("data: ").expect("a data line")).collect::<Vec<_>>().join("\n");
        let data: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(data["type"], name, "the data's type is the event's name");
        out.names.push(name.to_string());
        let last = i + 1 == frames.len();
        match name {
            "message_start" => {
                assert_eq!(i, 0, "message_start first");
                out.message = data["message"].clone();
                assert_eq!(out.message["type"], "message");
                assert_eq!(out.message["role"], "assistant");
                assert_eq!(out.message["content"], json!([]));
            }
            "ping" => {}
            "content_block_start" => {
                assert!(open.is_none(), "a block started before the last stopped");
                assert_eq!(data["index"], blocks, "blocks are numbered in order");
                let kind = data["content_block"]["type"].as_str().unwrap().to_string();
                assert!(kind == "text" || kind == "thinking", "{data}");
                out.message["content"].as_array_mut().unwrap().push(data["content_block"].clone());
                open = Some((blocks, kind));
                blocks += 1;
            }
            "content_block_delta" => {
                let (index, kind) = open.clone().expect("a delta outside a block");
                assert_eq!(data["index"], index);
                let block = &mut out.message["content"][index as usize];
                match (kind.as_str(), data["delta"]["type"].as_str().unwrap()) {
                    ("text", "text_delta") => {
                        let t = data["delta"]["text"].as_str().unwrap();
                        out.text.push_str(t);
                        block["text"] = json!(format!("{}{t}", block["text"].as_str().unwrap()));
                    }
                    ("thinking", "thinking_delta") => {
                        let t = data["delta"]["thinking"].as_str().unwrap();
                        out.thinking.push_str(t);
                        block["thinking"] = json!(format!("{}{t}", block["thinking"].as_str().unwrap()));
                    }
                    other => panic!("a delta of another kind than its block: {other:?}"),
                }
            }
            "content_block_stop" => {
                let (index, _) = open.take().expect("a stop outside a block");
                assert_eq!(data["index"], index);
            }
            "message_delta" => {
                assert!(open.is_none(), "message_delta with a block open");
                assert_eq!(i + 2, frames.len(), "message_delta comes just before message_stop");
                out.message["stop_reason"] = data["delta"]["stop_reason"].clone();
                out.message["usage"] = data["usage"].clone();
            }
            "message_stop" => assert!(last, "message_stop last"),
            "error" => {
                assert!(last, "the error event ends the stream");
                out.error = Some(data["error"].clone());
            }
            other => panic!("an event the API does not send: {other}"),
        }
    }
    out
}

async fn stream_of(resp: reqwest::Response) -> Streamed {
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    read_stream(&tokio::time::timeout(LIMIT, resp.text()).await.unwrap().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_whole_message() {
    let gw = Gateway::start(&[], &[]);
    let mut request = body("claude-sonnet-4-5", false, "hello there gateway");
    request["system"] = json!([{"type": "text", "text": "be brief"}]);
    request["tools"] = json!([{"name": "client_side", "input_schema": {"type": "object"}}]);
    request["temperature"] = json!(0.2);
    request["metadata"] = json!({"user_id": "u-1"});
    let (status, message) = json_of(post(&gw, &request, &[]).await).await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert!(message["id"].as_str().unwrap().starts_with("msg_"), "{message}");
    assert_eq!(message["model"], "claude-sonnet-4-5", "the model is echoed");
    // One text block: the echo of the prompt, which (a new conversation with a system prompt)
    // was seeded with it.
    let content = message["content"].as_array().unwrap();
    assert_eq!((content.len(), &content[0]["type"]), (1, &json!("text")), "{message}");
    let text = content[0]["text"].as_str().unwrap();
    assert!(text.contains("system: be brief") && text.ends_with("\n\nhello there gateway"), "{text:?}");
    assert_eq!(message["stop_reason"], "end_turn");
    assert!(message["stop_sequence"].is_null());
    assert!(message["usage"]["input_tokens"].as_u64().unwrap() > 0, "{message}");
    assert!(message["usage"]["output_tokens"].as_u64().unwrap() > 0, "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_message_with_thinking_and_without() {
    let gw = Gateway::start(&[], &[]);
    let mut request = body("superpi-code", true, "@think weighing it\none two three four");
    request["thinking"] = json!({"type": "enabled", "budget_tokens": 2048});
    let s = stream_of(post(&gw, &request, &[]).await).await;
    assert!(s.error.is_none(), "{:?}", s.error);
    assert_eq!(&s.names[..2], ["message_start", "ping"]);
    assert_eq!(s.text, "one two three four");
    assert!(s.thinking.contains("weighing it"), "{:?}", s.thinking);
    let content = s.message["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "thinking", "thinking first: {content:?}");
    assert_eq!(content.last().unwrap()["type"], "text");
    assert_eq!(s.message["stop_reason"], "end_turn");
    assert!(s.message["usage"]["output_tokens"].as_u64().unwrap() > 0);

    // Without thinking asked for (or with its text omitted, as Claude Code asks), only text.
    for thinking in [Value::Null, json!({"type": "adaptive", "display": "omitted"})] {
        let mut request = body("superpi-code", true, "@think weighing it\nfive six");
        request["thinking"] = thinking;
        let s = stream_of(post(&gw, &request, &[]).await).await;
        assert_eq!(s.message["content"], json!([{"type": "text", "text": "five six"}]));
        assert!(s.thinking.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_run_on_the_server_and_the_answer_is_text() {
    let gw = Gateway::start(&[], &[]);
    std::fs::write(gw.env.workspace.join("marker.txt"), "x").unwrap();
    let mut request = body("superpi-code", true, "@tool ls {\"path\": \".\"}");
    request["thinking"] = json!({"type": "adaptive"});
    // The client's own tools are not offered to the agent, nor called.
    request["tools"] = json!([{"name": "Bash", "input_schema": {"type": "object"}}]);
    let s = stream_of(post(&gw, &request, &[]).await).await;
    assert!(s.thinking.contains("[tool] ls"), "{:?}", s.thinking);
    assert!(s.text.contains("marker.txt"), "{:?}", s.text);
    assert!(s.message["content"].as_array().unwrap().iter().all(|b| b["type"] != "tool_use"));
    assert_eq!(s.message["stop_reason"], "end_turn");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_names_a_harness_and_any_other_is_the_default_one() {
    let gw = Gateway::start(&[], &[]);
    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    let harness_of = async |model: &str| {
        let resp = post(&gw, &body(model, false, "hi"), &[]).await;
        assert_eq!(resp.status(), 200);
        client.history(conversation_of(&resp)).await.unwrap().conversation.harness
    };
    assert_eq!(harness_of("superpi-planner").await, "superpi-planner");
    assert_eq!(harness_of("planner").await, "superpi-planner");
    let default = harness_of("claude-opus-5-5").await;
    for model in ["claude-haiku-4-5", "gpt-4o", "no-such-model-anywhere"] {
        assert_eq!(harness_of(model).await, default, "{model}");
    }
    assert_eq!(default, "superpi-code");
}

#[tokio::test(flavor = "multi_thread")]
async fn full_history_requests_continue_one_conversation() {
    let gw = Gateway::start(&[], &[]);
    let session = [("x-claude-code-session-id", "cc-session-1")];
    let first = json!({"model": "claude-sonnet-4-5", "max_tokens": 512,
    "system": [{"type": "text", "text": "You are a coding agent."}],
    "messages": [
        {"role": "user", "content": "my name is Ada"},
        {"role": "assistant", "content": [{"type": "text", "text": "noted"}]},
        {"role": "user", "content": [{"type": "text", "text": "say hi"}]},
        {"role": "system", "content": "# Environment: linux"}
    ]});
    let r1 = post(&gw, &first, &session).await;
    let c1 = conversation_of(&r1);
    assert_eq!(r1.headers()["x-session-id"], "cc-session-1");
    let (_, m1) = json_of(r1).await;
    let echoed = m1["content"][0]["text"].as_str().unwrap().to_string();
    assert!(echoed.contains("user: my name is Ada") && echoed.ends_with("say hi"), "seeded: {echoed:?}");
    assert!(echoed.contains("system: You are a coding agent."), "{echoed:?}");

    // The client sends the whole history again, with the answer and a new prompt (the system
    // turn moved and changed shape, as Claude Code's does): the last user message goes on in
    // the same conversation.
    let mut second = first.clone();
    let messages = second["messages"].as_array_mut().unwrap();
    messages.pop();
    messages.push(json!({"role": "system", "content": [{"type": "text", "text": "# Environment: linux"}]}));
    messages.push(json!({"role": "assistant", "content": m1["content"].clone()}));
    messages.push(json!({"role": "user", "content": "and again"}));
    let r2 = post(&gw, &second, &session).await;
    assert_eq!(conversation_of(&r2), c1);
    let (_, m2) = json_of(r2).await;
    assert_eq!(m2["content"][0]["text"], "and again", "later requests send the last user message");

    // x-session-id is a session too, and x-conversation-id attaches by id; without either, each
    // request is a new conversation.
    let a = post(&gw, &body("m", false, "one"), &[("x-session-id", "s-2")]).await;
    let b = post(&gw, &body("m", false, "two"), &[("x-session-id", "s-2")]).await;
    assert_eq!(conversation_of(&a), conversation_of(&b));
    let c1s = c1.to_string();
    assert_eq!(conversation_of(&post(&gw, &body("m", false, "three"), &[("x-conversation-id", &c1s)]).await), c1);
    let n1 = conversation_of(&post(&gw, &body("m", false, "a"), &[]).await);
    let n2 = conversation_of(&post(&gw, &body("m", false, "b"), &[]).await);
    assert!(n1 != n2 && n1 != c1);

    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    let history = client.history(c1).await.unwrap();
    let users = history.entries.iter().filter(|e| e.kind == superpi_proto::EntryKind::User).count();
    assert_eq!(users, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_in_anthropics_shape_and_serving_goes_on() {
    let gw = Gateway::start(&[], &[]);
    let raw = http().post(gw.url("/v1/messages")).body("this is not json").send().await.unwrap();
    let (status, error) = json_of(raw).await;
    assert_error(status, &error, 400, "invalid_request_error");
    let mut no_max = body("superpi-code", false, "x");
    no_max.as_object_mut().unwrap().remove("max_tokens");
    let (status, error) = json_of(post(&gw, &no_max, &[]).await).await;
    assert_error(status, &error, 400, "invalid_request_error");
    assert_eq!(error["error"]["message"], "max_tokens: Field required");
    for (field, value) in [
        ("max_tokens", json!("1024")),
        ("max_tokens", json!(0)),
        ("model", json!(7)),
        ("messages", json!("hi")),
        ("stream", json!("yes")),
        ("system", json!(5)),
        ("messages", json!([{"role": "tool", "content": "x"}])),
        (
            "messages",
            json!([{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://x"}}]}]),
        ),
        ("messages", json!([{"role": "assistant", "content": "only an assistant"}])),
    ] {
        let mut bad = body("superpi-code", true, "x");
        bad[field] = value;
        let (status, error) = json_of(post(&gw, &bad, &[]).await).await;
        assert_error(status, &error, 400, "invalid_request_error");
    }
    let (status, error) =
        json_of(post(&gw, &body("superpi-code", false, "x"), &[("x-superpi-mode", "yolo")]).await).await;
    assert_error(status, &error, 400, "invalid_request_error");
    let huge = body("superpi-code", false, &"x".repeat(9 << 20));
    let (status, error) = json_of(post(&gw, &huge, &[]).await).await;
    assert_error(status, &error, 413, "request_too_large");
    // A foreign browser Origin without a token is refused as Anthropic refuses a permission.
    let (status, error) =
        json_of(post(&gw, &body("superpi-code", false, "x"), &[("origin", "https://evil.example")]).await).await;
    assert_error(status, &error, 403, "permission_error");

    // A failed turn: streamed, the error event ends the stream; whole, a 500 not to retry.
    let s = stream_of(post(&gw, &body("superpi-code", true, "@fail boom"), &[]).await).await;
    let error = s.error.expect("an error event");
    assert_eq!(error["type"], "api_error");
    assert!(error["message"].as_str().unwrap().contains("boom"), "{error}");
    assert!(!s.names.contains(&"message_delta".to_string()), "{:?}", s.names);
    let resp = post(&gw, &body("superpi-code", false, "@fail boom"), &[]).await;
    assert_eq!(resp.headers()["x-should-retry"], "false");
    let (status, error) = json_of(resp).await;
    assert_error(status, &error, 500, "api_error");

    let (status, message) = json_of(post(&gw, &body("superpi-code", false, "still here"), &[]).await).await;
    assert_eq!((status, &message["content"][0]["text"]), (200, &json!("still here")));
}

/// Every kind of malformed request, each on a connection of its own and each followed by a
/// real message: each gets a 4xx (in Anthropic's shape when it reached the endpoint) and the
/// gateway keeps serving.
#[test]
fn every_kind_of_malformed_request_is_refused_and_serving_goes_on() {
    use superpi_tests::bad_input::{http_exchange, http_requests};
    let gw = Gateway::start(&[], &[]);
    let addr = gw.base.trim_start_matches("http://").trim_end_matches('/').to_string();
    let bad_fields = json!({"model": 7, "max_tokens": "lots", "messages": "hi", "stream": "yes"});
    let good = body("mock", false, "still here?").to_string();
    let good = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-api-key: k\r\nanthropic-version: 2023-06-01\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{good}",
        good.len()
    );
    for bad in http_requests("/v1/messages", 8 << 20, &bad_fields) {
        let (status, body) = http_exchange(&addr, &bad.raw);
        assert!((400..500).contains(&status), "{}: {status} {body}", bad.name);
        if let (Ok(error), false) = (serde_json::from_str::<Value>(&body), bad.name == "an unknown path") {
            assert_eq!(error["type"], "error", "{}: {body}", bad.name);
            assert!(error["error"]["message"].is_string(), "{}: {body}", bad.name);
        }
        let (status, body) = http_exchange(&addr, good.as_bytes());
        assert_eq!(status, 200, "after {}: {body}", bad.name);
        assert!(body.contains("\"type\":\"message\""), "after {}: {body}", bad.name);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_is_taken_from_x_api_key_or_a_bearer_header() {
    let gw = Gateway::start(&[], &[("SUPERPI_GATEWAY_TOKEN", "alpha, beta")]);
    let request = body("superpi-code", false, "with a key");
    let (status, error) = json_of(post(&gw, &request, &[]).await).await;
    assert_error(status, &error, 401, "authentication_error");
    let (status, error) = json_of(post(&gw, &request, &[("x-api-key", "gamma")]).await).await;
    assert_error(status, &error, 401, "authentication_error");
    for key in [("x-api-key", "alpha"), ("authorization", "Bearer beta")] {
        let (status, message) = json_of(post(&gw, &request, &[key]).await).await;
        assert_eq!(status, 200, "{key:?}: {message}");
        assert_eq!(message["content"][0]["text"], "with a key");
    }
    // A wrong bearer with a right x-api-key (an SDK given both) is let in, and the reverse too.
    let both = [("authorization", "Bearer gamma"), ("x-api-key", "alpha")];
    assert_eq!(post(&gw, &request, &both).await.status(), 200);
    // One token is one principal, whichever header carries it: its session is its own.
    let a1 = post(&gw, &request, &[("x-api-key", "alpha"), ("x-session-id", "shared")]).await;
    let a2 = post(&gw, &request, &[("authorization", "Bearer alpha"), ("x-session-id", "shared")]).await;
    let b1 = post(&gw, &request, &[("x-api-key", "beta"), ("x-session-id", "shared")]).await;
    assert_eq!(conversation_of(&a1), conversation_of(&a2));
    assert_ne!(conversation_of(&a1), conversation_of(&b1));

    // count_tokens and the models list take the key too; the list comes in Anthropic's shape.
    let count = json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "count these words"}]});
    let (status, error) = json_of(post_to(&gw, "/v1/messages/count_tokens", &count, &[]).await).await;
    assert_error(status, &error, 401, "authentication_error");
    let (status, counted) =
        json_of(post_to(&gw, "/v1/messages/count_tokens", &count, &[("x-api-key", "beta")]).await).await;
    assert_eq!(status, 200, "{counted}");
    assert!(counted["input_tokens"].as_u64().unwrap() > 0, "{counted}");
    let models =
        http().get(gw.url("/v1/models")).header("x-api-key", "alpha").header("anthropic-version", "2023-06-01");
    let (status, list) = json_of(models.send().await.unwrap()).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["has_more"], false);
    assert_eq!(list["first_id"], list["data"][0]["id"]);
    let code = list["data"].as_array().unwrap().iter().find(|m| m["id"] == "superpi-code").unwrap();
    assert_eq!((&code["type"], code["display_name"].is_string()), (&json!("model"), true), "{code}");
    let unauthorized = http().get(gw.url("/v1/models")).header("anthropic-version", "2023-06-01");
    let (status, error) = json_of(unauthorized.send().await.unwrap()).await;
    assert_error(status, &error, 401, "authentication_error");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_leaves_cancels_its_turn() {
    let gw = Gateway::start(&[], &[]);
    let prompt = "@slow 100\none two three four five six seven eight nine ten eleven twelve";
    let mut resp = post(&gw, &body("superpi-code", true, prompt), &[("x-session-id", "leaving")]).await;
    let conversation_id = conversation_of(&resp);
    let mut seen = String::new();
    while !seen.contains("text_delta") {
        let chunk = tokio::time::timeout(LIMIT, resp.chunk()).await.unwrap().unwrap().expect("more of the stream");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(resp);
    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    let end = superpi_tests::first_turn_end(&client, conversation_id).await;
    assert_eq!(end, EventBody::TurnCancelled {});
}

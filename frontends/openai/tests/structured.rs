//! End to end: structured output through the gateway. `response_format` (Chat Completions) and
//! `text.format` (Responses) become the kernel's `output_schema`; the mock answers its
//! `@answer` lines, one per model request, so a refused answer and its retry are scripted; a
//! schema the kernel refuses leaves no conversation behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Gateway, chat_body, http, read_stream};
use serde_json::{Value, json};
use superpi_client::KernelClient;

fn schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false})
}

fn with_schema(stream: bool, prompt: &str) -> Value {
    let mut body = chat_body("superpi-code", stream, prompt);
    body["response_format"] =
        json!({"type": "json_schema", "json_schema": {"name": "count", "schema": schema(), "strict": true}});
    body
}

async fn post(gw: &Gateway, path: &str, body: &Value) -> (u16, String) {
    let resp = http().post(gw.url(path)).body(body.to_string()).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

async fn post_json(gw: &Gateway, path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = post(gw, path, body).await;
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")))
}

#[tokio::test(flavor = "multi_thread")]
async fn response_format_json_schema_answers_the_checked_json() {
    let gw = Gateway::start(&[], &[]);
    // Valid at once: the content is the answer's JSON.
    let (status, body) = post_json(&gw, "/v1/chat/completions", &with_schema(false, "@answer {\"n\": 3}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], r#"{"n":3}"#, "{body}");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");

    // Invalid, then valid: the kernel asks again; the refused answer is not in the content.
    let (status, body) =
        post_json(&gw, "/v1/chat/completions", &with_schema(false, "@answer three\n@answer {\"n\": 4}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], r#"{"n":4}"#, "{body}");
    // Streamed the same: one content, the accepted JSON; the retry shows as reasoning.
    let (status, text) =
        post(&gw, "/v1/chat/completions", &with_schema(true, "@answer three\n@answer {\"n\": 5}")).await;
    assert_eq!(status, 200, "{text}");
    let streamed = read_stream(&text);
    assert_eq!((streamed.content.as_str(), streamed.error), (r#"{"n":5}"#, None), "{text}");
    assert!(streamed.reasoning.contains("does not match the required JSON Schema"), "{}", streamed.reasoning);

    // `json_object`: any JSON object, once a message says "JSON" (OpenAI's rule).
    let mut body = chat_body("superpi-code", false, "@answer [1]\n@answer {\"any\": true}");
    body["response_format"] = json!({"type": "json_object"});
    let (status, refused) = post_json(&gw, "/v1/chat/completions", &body).await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("the word 'json'"), "{refused}");
    body["messages"].as_array_mut().unwrap().insert(0, json!({"role": "system", "content": "Answer in JSON."}));
    let (status, body) = post_json(&gw, "/v1/chat/completions", &body).await;
    assert_eq!((status, &body["choices"][0]["message"]["content"]), (200, &json!(r#"{"any":true}"#)), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_refused_twice_and_a_bad_response_format_are_openai_errors() {
    let gw = Gateway::start(&[], &[]);
    // Twice invalid: 500 `model_error`, as OpenAI answers a model's invalid content, naming why.
    let twice = "@answer {\"n\": \"x\"}\n@answer {\"n\": \"y\"}";
    let (status, body) = post_json(&gw, "/v1/chat/completions", &with_schema(false, twice)).await;
    assert_eq!(status, 500, "{body}");
    let error = &body["error"];
    assert_eq!((&error["type"], &error["code"]), (&json!("model_error"), &json!("output_schema_mismatch")), "{body}");
    assert!(error["message"].as_str().unwrap().contains("at /n"), "{body}");
    // Streamed: the same error object ends the stream.
    let (_, text) = post(&gw, "/v1/chat/completions", &with_schema(true, twice)).await;
    let streamed = read_stream(&text);
    assert_eq!(streamed.error.as_ref().map(|e| e["type"].clone()), Some(json!("model_error")), "{text}");
    assert!(streamed.content.is_empty(), "{text}");

    // Bad `response_format`: 400 in OpenAI's shape, naming the parameter.
    for (format, param) in [
        (json!({"type": "xml"}), "response_format.type"),
        (json!({"type": "json_schema"}), "response_format.json_schema"),
        (
            json!({"type": "json_schema", "json_schema": {"name": "a b", "schema": schema()}}),
            "response_format.json_schema.name",
        ),
        (
            json!({"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "array"}}}),
            "response_format.json_schema.schema",
        ),
        (json!("json"), "response_format"),
    ] {
        let mut body = chat_body("superpi-code", false, "hi");
        body["response_format"] = format.clone();
        let (status, body) = post_json(&gw, "/v1/chat/completions", &body).await;
        assert_eq!((status, &body["error"]["type"]), (400, &json!("invalid_request_error")), "{format}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains(&format!("'{param}'")), "{format}: {body}");
    }
    // A schema the kernel cannot compile is its refusal, a 400 too, and leaves no conversation.
    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    let before = client.list().await.unwrap().len();
    assert!(before > 0, "the conversations above are listed");
    let mut body = chat_body("superpi-code", false, "hi");
    body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object", "properties": {"n": {"type": 5}}}}});
    let (status, body) = post_json(&gw, "/v1/chat/completions", &body).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(client.list().await.unwrap().len(), before, "the refused request's conversation is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_text_format_is_the_output_schema() {
    let gw = Gateway::start(&[], &[]);
    let format = json!({"type": "json_schema", "name": "count", "schema": schema(), "strict": true});
    let body =
        json!({"model": "superpi-code", "input": "@answer three\n@answer {\"n\": 6}", "text": {"format": format}});
    let (status, body) = post_json(&gw, "/v1/responses", &body).await;
    assert_eq!((status, &body["status"]), (200, &json!("completed")), "{body}");
    let message = body["output"].as_array().unwrap().iter().find(|i| i["type"] == "message").unwrap();
    assert_eq!(message["content"][0]["text"], r#"{"n":6}"#, "{body}");
    assert_eq!(body["text"]["format"]["name"], "count", "the format is echoed: {body}");

    let body = json!({"model": "superpi-code", "input": "hi", "text": {"format": {"type": "json_schema", "schema": schema()}}});
    let (status, body) = post_json(&gw, "/v1/responses", &body).await;
    assert_eq!((status, &body["error"]["param"]), (400, &json!("text.format.name")), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_output_config_format_is_the_output_schema() {
    let gw = Gateway::start(&[], &[]);
    let message = |prompt: &str| {
        json!({"model": "superpi-code", "max_tokens": 1024, "messages": [{"role": "user", "content": prompt}],
               "output_config": {"format": {"type": "json_schema", "schema": schema()}}})
    };
    let (status, body) = post_json(&gw, "/v1/messages", &message("@answer three\n@answer {\"n\": 7}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"][0]["text"], r#"{"n":7}"#, "{body}");
    assert_eq!(body["stop_reason"], "end_turn", "{body}");

    // Refused twice: Anthropic's error shape, saying why.
    let (status, body) =
        post_json(&gw, "/v1/messages", &message("@answer {\"n\": \"x\"}\n@answer {\"n\": \"y\"}")).await;
    assert_eq!((status, &body["type"]), (500, &json!("error")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("at /n"), "{body}");
}

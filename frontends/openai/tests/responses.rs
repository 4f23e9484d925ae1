//! End-to-end: `POST /v1/responses` of the real `superpi gateway` process (and the kernel it
//! starts, on the mock model) over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Gateway, http};
use serde_json::{Value, json};
use superpi_client::KernelClient;
use superpi_proto::{EntryKind, EventBody};

const LIMIT: Duration = Duration::from_secs(60);

async fn post(gw: &Gateway, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = http().post(gw.url("/v1/responses")).body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    tokio::time::timeout(LIMIT, req.send()).await.expect("answer in time").unwrap()
}

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")))
}

fn conversation_of(resp: &reqwest::Response) -> i64 {
    resp.headers()["x-superpi-conversation-id"].to_str().unwrap().parse().unwrap()
}

fn body(input: Value, stream: bool) -> Value {
    json!({"model": "superpi-code", "input": input, "stream": stream})
}

/// A refusal in the Responses error shape: status, code, a message, `type`, and `param`.
fn assert_error(status: u16, body: &Value, want: u16, code: &str, param: Option<&str>) {
    assert_eq!(status, want, "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], code, "{body}");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert!(error["type"].is_string(), "{body}");
    assert!(error.as_object().unwrap().contains_key("param"), "{body}");
    assert_eq!(error["param"].as_str(), param, "{body}");
}

/// The message items' text of a response, joined.
fn output_text(response: &Value) -> String {
    let items = response["output"].as_array().unwrap();
    let parts = items.iter().filter(|i| i["type"] == "message").flat_map(|i| i["content"].as_array().unwrap());
    parts.map(|p| p["text"].as_str().unwrap()).collect()
}

fn summaries(response: &Value) -> String {
    let items = response["output"].as_array().unwrap();
    let parts = items.iter().filter(|i| i["type"] == "reasoning").flat_map(|i| i["summary"].as_array().unwrap());
    parts.map(|p| p["text"].as_str().unwrap()).collect()
}

/// A streamed answer, read as a client does: every event's `event:` line matches its `type`,
/// sequence numbers count from 0, and the text deltas add up to the last event's items.
struct Events {
    all: Vec<Value>,
}

impl Events {
    fn read(body: &str) -> Events {
        let mut all = Vec::new();
        for block in body.split("\n\n").filter(|b| !b.trim().is_empty()) {
            let mut lines = block.lines();
            let name =
                lines.next().unwrap().strip_prefix("event: ").unwrap_or_else(|| panic!("no event line: {block}"));
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap_or_else(|| panic!("no data line: {block}"));
            assert!(lines.next().is_none(), "{block}");
            let event: Value = serde_json::from_str(data).unwrap();
            assert_eq!(event["type"], name, "{block}");
            assert_eq!(event["sequence_number"], all.len() as u64, "{block}");
            all.push(event);
        }
        assert!(!all.is_empty(), "no events: {body:?}");
        assert_eq!(all[0]["type"], "response.created");
        assert_eq!(all.get(1).map(|e| &e["type"]), Some(&json!("response.in_progress")));
        let ends = ["response.completed", "response.failed", "response.incomplete"];
        for e in &all[..all.len() - 1] {
            assert!(!ends.contains(&e["type"].as_str().unwrap()), "an end before the last event: {e}");
        }
        let last = all.last().unwrap();
        assert!(ends.contains(&last["type"].as_str().unwrap()), "{last}");
        let deltas: String = all
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, output_text(&last["response"]), "the deltas add up to the final items");
        let ids: std::collections::HashSet<&str> =
            all.iter().filter_map(|e| e.get("response")).map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 1, "one response id: {ids:?}");
        Events { all }
    }

    fn last(&self) -> &Value {
        &self.all.last().unwrap()["response"]
    }

    fn kinds(&self) -> Vec<&str> {
        self.all.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }
}

async fn stream(gw: &Gateway, body: &Value, headers: &[(&str, &str)]) -> Events {
    let resp = post(gw, body, headers).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    Events::read(&resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_whole_response() {
    let gw = Gateway::start(&[], &[]);
    let mut request = body(json!("hello there responses"), false);
    request["tools"] = json!([{"type": "function", "name": "client_side", "parameters": {}}]);
    request["temperature"] = json!(0.1);
    request["store"] = json!(false);
    request["metadata"] = json!({"run": "e2e"});
    let resp = post(&gw, &request, &[]).await;
    let conversation_id = conversation_of(&resp);
    let (status, r) = json_of(resp).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["object"], "response");
    assert_eq!(r["id"], format!("resp_{conversation_id}_1"), "{r}");
    assert_eq!((&r["status"], &r["model"], &r["error"]), (&json!("completed"), &json!("superpi-code"), &Value::Null));
    assert_eq!(r["metadata"], json!({"run": "e2e"}));
    assert_eq!(r["tools"], json!([]), "client tools are ignored");
    let [message] = r["output"].as_array().unwrap().as_slice() else { panic!("{r}") };
    assert_eq!(
        (&message["type"], &message["role"], &message["status"]),
        (&json!("message"), &json!("assistant"), &json!("completed"))
    );
    assert_eq!(message["content"][0]["type"], "output_text");
    assert_eq!(output_text(&r), "hello there responses");
    let usage = &r["usage"];
    assert!(usage["input_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_response_with_reasoning_and_server_side_tools() {
    let gw = Gateway::start(&[], &[]);
    let events = stream(&gw, &body(json!("@think weighing it\none two three four"), true), &[]).await;
    let kinds = events.kinds();
    assert!(kinds.contains(&"response.reasoning_summary_text.delta"), "{kinds:?}");
    for kind in [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
    }
    let last = events.last();
    assert_eq!(events.all.last().unwrap()["type"], "response.completed");
    assert_eq!(output_text(last), "one two three four");
    assert!(summaries(last).contains("weighing it"), "{last}");
    assert!(last["usage"]["output_tokens"].as_u64().is_some(), "{last}");

    // The agent's tools run in the kernel; the client sees their progress as reasoning and the
    // answer after them as a message of its own, never a function call.
    std::fs::write(gw.env.workspace.join("marker.txt"), "x").unwrap();
    let events = stream(
        &gw,
        &body(
            json!([{"role": "user", "content": [{"type": "input_text", "text": "@tool ls {\"path\": \".\"}"}]}]),
            true,
        ),
        &[],
    )
    .await;
    let last = events.last();
    assert!(summaries(last).contains("[tool] ls"), "{last}");
    assert!(output_text(last).contains("marker.txt"), "{last}");
    assert!(events.all.iter().all(|e| e["item"]["type"] != "function_call"));
}

#[tokio::test(flavor = "multi_thread")]
async fn previous_response_id_continues_the_conversation_across_a_restart() {
    let mut gw = Gateway::start(&[], &[]);
    let first =
        post(&gw, &json!({"model": "superpi-code", "instructions": "be brief", "input": "my name is Ada"}), &[]).await;
    let conversation_id = conversation_of(&first);
    let (status, r1) = json_of(first).await;
    assert_eq!(status, 200, "{r1}");
    // A new conversation is seeded with the instructions.
    assert!(output_text(&r1).contains("system: be brief") && output_text(&r1).ends_with("my name is Ada"), "{r1}");
    assert_eq!(r1["instructions"], "be brief");

    let next = json!({"model": "superpi-code", "previous_response_id": r1["id"], "input": "and again", "stream": true});
    let resp = post(&gw, &next, &[]).await;
    assert_eq!(conversation_of(&resp), conversation_id);
    let events = Events::read(&resp.text().await.unwrap());
    let r2 = events.last();
    assert_eq!(output_text(r2), "and again", "a continued conversation gets only the new input");
    assert_eq!(r2["previous_response_id"], r1["id"]);
    assert_ne!(r2["id"], r1["id"]);

    // The id alone finds the conversation: after the gateway's restart, and the kernel's.
    gw.restart(&[], &[]);
    gw.env.kill_kernel();
    let third = json!({"model": "superpi-code", "previous_response_id": r2["id"], "input": "third"});
    let resp = post(&gw, &third, &[]).await;
    assert_eq!(conversation_of(&resp), conversation_id);
    let (status, r3) = json_of(resp).await;
    assert_eq!((status, output_text(&r3)), (200, "third".to_string()), "{r3}");

    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    let history = client.history(conversation_id).await.unwrap();
    assert_eq!(history.entries.iter().filter(|e| e.kind == EntryKind::User).count(), 3);

    // Sessions work as on the chat route (Codex sends its thread as `session-id`).
    let s1 = post(&gw, &body(json!("one"), false), &[("session-id", "thread-1")]).await;
    let s2 = post(
        &gw,
        &body(json!([{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]), false),
        &[("session-id", "thread-1")],
    )
    .await;
    assert_eq!(conversation_of(&s1), conversation_of(&s2));
    let (_, r) = json_of(s2).await;
    assert_eq!(output_text(&r), "two", "a session's later request submits its last user message");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_principals_response_cannot_be_continued() {
    let gw = Gateway::start(&[], &[("SUPERPI_GATEWAY_TOKEN", "alpha, beta")]);
    let (status, body401) = json_of(post(&gw, &body(json!("x"), false), &[]).await).await;
    assert_error(status, &body401, 401, "invalid_api_key", None);
    let alpha = [("authorization", "Bearer alpha")];
    let beta = [("authorization", "Bearer beta")];
    let (status, r1) = json_of(post(&gw, &body(json!("secret plans"), false), &alpha).await).await;
    assert_eq!(status, 200, "{r1}");
    let next = json!({"model": "superpi-code", "previous_response_id": r1["id"], "input": "what were the plans?"});
    let (status, refused) = json_of(post(&gw, &next, &beta).await).await;
    assert_error(status, &refused, 400, "previous_response_not_found", Some("previous_response_id"));
    assert!(refused["error"]["message"].as_str().unwrap().contains(r1["id"].as_str().unwrap()), "{refused}");
    // Streamed, the same refusal comes before any event.
    let mut streamed = next.clone();
    streamed["stream"] = json!(true);
    let (status, refused) = json_of(post(&gw, &streamed, &beta).await).await;
    assert_error(status, &refused, 400, "previous_response_not_found", Some("previous_response_id"));
    let (status, r2) = json_of(post(&gw, &next, &alpha).await).await;
    assert_eq!((status, output_text(&r2)), (200, "what were the plans?".to_string()), "{r2}");
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_in_the_responses_shape_and_serving_goes_on() {
    let gw = Gateway::start(&[], &[]);
    let raw = http().post(gw.url("/v1/responses")).body("this is not json").send().await.unwrap();
    let (status, b) = json_of(raw).await;
    assert_error(status, &b, 400, "invalid_params", None);
    let cases = [
        (json!({"input": "x"}), "model"),
        (json!({"model": 7, "input": "x"}), "model"),
        (json!({"model": "superpi-code", "input": 5}), "input"),
        (json!({"model": "superpi-code"}), "input"),
        (json!({"model": "superpi-code", "input": "x", "stream": "yes"}), "stream"),
        (json!({"model": "superpi-code", "input": [{"role": "user", "content": 3}]}), "input[0].content"),
        (json!({"model": "superpi-code", "input": "x", "previous_response_id": ["resp_1_1"]}), "previous_response_id"),
        (
            json!({"model": "superpi-code", "input": [{"role": "user", "content": "x"},
                   {"type": "function_call_output", "call_id": "call_1", "output": "42"}]}),
            "input[1]",
        ),
    ];
    for (bad, param) in cases {
        let (status, b) = json_of(post(&gw, &bad, &[]).await).await;
        assert_error(status, &b, 400, "invalid_params", Some(param));
    }
    for unknown in ["resp_999999_1", "resp_nonsense", "chatcmpl-1-1"] {
        let bad = json!({"model": "superpi-code", "input": "x", "previous_response_id": unknown});
        let (status, b) = json_of(post(&gw, &bad, &[]).await).await;
        assert_error(status, &b, 400, "previous_response_not_found", Some("previous_response_id"));
    }
    let (status, b) = json_of(post(&gw, &body(json!("x"), false), &[("x-superpi-mode", "yolo")]).await).await;
    assert_error(status, &b, 400, "invalid_params", None);
    let (status, b) = json_of(post(&gw, &json!({"model": "no-such-model-anywhere", "input": "x"}), &[]).await).await;
    assert_error(status, &b, 404, "model_not_found", None);
    let (status, b) = json_of(post(&gw, &body(json!("x"), false), &[("origin", "https://evil.example")]).await).await;
    assert_error(status, &b, 403, "forbidden_origin", None);
    let local = post(&gw, &body(json!("x"), false), &[("origin", "http://localhost:3000")]).await;
    assert_eq!(local.headers()["access-control-allow-origin"], "http://localhost:3000");
    let huge = body(json!("x".repeat(9 << 20)), false);
    let (status, b) = json_of(post(&gw, &huge, &[]).await).await;
    assert_error(status, &b, 413, "request_too_large", None);
    let (status, b) = json_of(http().get(gw.url("/v1/responses")).send().await.unwrap()).await;
    assert_error(status, &b, 405, "method_not_allowed", None);
    let (status, b) = json_of(http().post(gw.url("/v1/responses/compact")).body("{}").send().await.unwrap()).await;
    assert_error(status, &b, 404, "not_found", None);

    // A failed turn: streamed, `response.failed` ends the events; whole, an HTTP error that the
    // clients do not retry (the turn ran).
    let events = stream(&gw, &body(json!("@fail boom"), true), &[]).await;
    let end = events.all.last().unwrap();
    assert_eq!((&end["type"], &end["response"]["status"]), (&json!("response.failed"), &json!("failed")), "{end}");
    assert_eq!(end["response"]["error"]["code"], "server_error");
    assert!(end["response"]["error"]["message"].as_str().unwrap().contains("boom"), "{end}");
    let resp = post(&gw, &body(json!("@fail boom"), false), &[]).await;
    assert_eq!(resp.headers()["x-should-retry"], "false");
    let (status, b) = json_of(resp).await;
    assert_error(status, &b, 500, "turn_failed", None);

    // And it still serves.
    let (status, r) = json_of(post(&gw, &body(json!("still here"), false), &[]).await).await;
    assert_eq!((status, output_text(&r)), (200, "still here".to_string()));
}

/// Every kind of malformed HTTP request, each on a connection of its own and each followed by a
/// real response: each gets a 4xx and the gateway keeps serving.
#[test]
fn every_kind_of_malformed_request_is_refused_and_serving_goes_on() {
    use superpi_tests::bad_input::{http_exchange, http_requests};
    let gw = Gateway::start(&[], &[]);
    let addr = gw.base.trim_start_matches("http://").trim_end_matches('/').to_string();
    let bad_fields = json!({"model": 7, "input": {"role": "user"}, "stream": "yes", "previous_response_id": 5});
    let good = json!({"model": "mock", "input": "still here?"}).to_string();
    let good = format!(
        "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{good}",
        good.len()
    );
    for bad in http_requests("/v1/responses", 8 << 20, &bad_fields) {
        let (status, body) = http_exchange(&addr, &bad.raw);
        assert!((400..500).contains(&status), "{}: {status} {body}", bad.name);
        if let Ok(error) = serde_json::from_str::<Value>(&body) {
            assert!(error["error"]["message"].is_string(), "{}: {body}", bad.name);
        }
        let (status, body) = http_exchange(&addr, good.as_bytes());
        assert_eq!(status, 200, "after {}: {body}", bad.name);
        assert!(body.contains("\"object\":\"response\""), "after {}: {body}", bad.name);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_leaves_cancels_its_turn() {
    let gw = Gateway::start(&[], &[]);
    let request = body(json!("@slow 100\none two three four five six seven eight nine ten eleven twelve"), true);
    let mut resp = post(&gw, &request, &[]).await;
    let conversation_id = conversation_of(&resp);
    let mut seen = String::new();
    while !seen.contains("response.output_text.delta") {
        let chunk = tokio::time::timeout(LIMIT, resp.chunk()).await.unwrap().unwrap().expect("more of the stream");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(resp);
    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    assert_eq!(superpi_tests::first_turn_end(&client, conversation_id).await, EventBody::TurnCancelled {});
}

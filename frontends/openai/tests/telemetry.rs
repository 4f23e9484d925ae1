//! End to end: the gateway's `GET /metrics` parses as Prometheus text and its counters move
//! after a turn (behind the gateway's token) and after a failed one, and a turn's spans reach a local OTLP/HTTP
//! collector stub that decodes what the kernel posts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::Write;
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Gateway, chat_body, http};
use serde_json::Value;

/// `/metrics` read and parsed as a Prometheus server would.
async fn scrape(gw: &Gateway, token: &str) -> prometheus_parse::Scrape {
    let resp = http().get(gw.url("/metrics")).bearer_auth(token).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    let text = resp.text().await.unwrap();
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap()
}

/// The value of the sample `name` whose labels include `labels` (0 when there is none).
fn value(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(ref buckets) => buckets.last().map_or(0.0, |b| b.count),
            _ => 0.0,
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_parse_and_move_after_a_turn() {
    let gw = Gateway::start(&[], &[("SUPERPI_GATEWAY_TOKEN", "m-token")]);
    let refused = http().get(gw.url("/metrics")).send().await.unwrap();
    assert_eq!(refused.status(), 401, "the same token rule as the API");

    let before = scrape(&gw, "m-token").await;
    assert!(before.docs.contains_key("superpi_turns_total"), "{:?}", before.docs);
    assert_eq!(value(&before, "superpi_turns_total", &[]), 0.0);

    let prompt = "@tool ls {\"path\": \".\"}\n@tool nope {}";
    let body = chat_body("superpi-code", false, prompt);
    let answer = http().post(gw.url("/v1/chat/completions")).bearer_auth("m-token").json(&body).send().await.unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());

    let after = scrape(&gw, "m-token").await;
    let turns = [("harness", "superpi-code"), ("status", "completed")];
    assert_eq!(value(&after, "superpi_turns_total", &turns), 1.0);
    assert_eq!(value(&after, "superpi_model_requests_total", &[("model", "mock"), ("status", "ok")]), 2.0);
    assert_eq!(value(&after, "superpi_tool_calls_total", &[("tool", "ls"), ("status", "ok")]), 1.0);
    assert_eq!(value(&after, "superpi_tool_calls_total", &[("tool", "nope"), ("status", "blocked")]), 1.0);
    assert!(value(&after, "superpi_tokens_total", &[("model", "mock"), ("kind", "input")]) > 0.0);
    assert!(value(&after, "superpi_tokens_total", &[("kind", "output")]) > 0.0);
    assert_eq!(value(&after, "superpi_turn_duration_seconds_count", &[("harness", "superpi-code")]), 1.0);
    assert_eq!(value(&after, "superpi_tool_call_duration_seconds", &[("tool", "ls")]), 1.0, "the +Inf bucket");
    assert_eq!(value(&after, "superpi_errors_total", &[]), 0.0);

    // A failing model request fails its turn: both are counted as errors.
    let body = chat_body("superpi-code", false, "@fail the model is down");
    let answer = http().post(gw.url("/v1/chat/completions")).bearer_auth("m-token").json(&body).send().await.unwrap();
    assert!(!answer.status().is_success(), "{}", answer.text().await.unwrap());
    let failed = scrape(&gw, "m-token").await;
    assert_eq!(value(&failed, "superpi_turns_total", &[("status", "error")]), 1.0);
    assert_eq!(value(&failed, "superpi_model_requests_total", &[("status", "error")]), 1.0);
    assert_eq!(value(&failed, "superpi_errors_total", &[("source", "model")]), 1.0);
    assert_eq!(value(&failed, "superpi_errors_total", &[("source", "turn")]), 1.0);
}

/// A local OTLP/HTTP collector: each POST's JSON body goes to the channel, answered 200 (one
/// request per connection, so it says `connection: close`).
fn collector() -> (String, mpsc::Receiver<(String, Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Some(request) = superpi_tests::http::read_request(&stream) else { continue };
            let answer =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
            let _ = stream.write_all(answer.as_bytes());
            let _ = tx.send((request.path().to_string(), serde_json::from_slice(&request.body).unwrap()));
        }
    });
    (url, rx)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_is_traced_to_an_otlp_collector() {
    let (endpoint, posts) = collector();
    let gw = Gateway::start(&[], &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint), ("OTEL_SERVICE_NAME", "superpi-test")]);
    let body = chat_body("superpi-code", false, "@tool ls {\"path\": \".\"}");
    let answer = http().post(gw.url("/v1/chat/completions")).json(&body).send().await.unwrap();
    assert_eq!(answer.status(), 200);

    // Spans come in batches; wait (bounded) until the turn's own span has come.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut spans: Vec<Value> = Vec::new();
    while !spans.iter().any(|s| s["name"] == "superpi.turn") {
        let left = deadline.saturating_duration_since(Instant::now());
        let (path, request) = posts.recv_timeout(left).expect("the turn's spans reach the collector");
        assert_eq!(path, "/v1/traces");
        let resource = &request["resourceSpans"][0];
        let service = &resource["resource"]["attributes"][0];
        assert_eq!(
            (service["key"].as_str(), service["value"]["stringValue"].as_str()),
            (Some("service.name"), Some("superpi-test"))
        );
        spans.extend(resource["scopeSpans"][0]["spans"].as_array().unwrap().iter().cloned());
    }
    let named = |prefix: &str| {
        spans.iter().filter(|s| s["name"].as_str().unwrap().starts_with(prefix)).cloned().collect::<Vec<_>>()
    };
    let turn = &named("superpi.turn")[0];
    let chats = named("chat mock");
    let tools = named("execute_tool ls");
    assert_eq!((chats.len(), tools.len()), (2, 1), "{spans:#?}");
    let trace = turn["traceId"].as_str().unwrap();
    assert_eq!(trace.len(), 32);
    assert_eq!(turn["parentSpanId"], "");
    for child in chats.iter().chain(&tools) {
        assert_eq!(child["traceId"], trace, "{child}");
        assert_eq!(child["parentSpanId"], turn["spanId"], "{child}");
        let start: u64 = child["startTimeUnixNano"].as_str().unwrap().parse().unwrap();
        let end: u64 = child["endTimeUnixNano"].as_str().unwrap().parse().unwrap();
        assert!(start <= end);
    }
    assert_eq!(turn["status"]["code"], 1);
    let attribute = |span: &Value, key: &str| {
        span["attributes"].as_array().unwrap().iter().find(|a| a["key"] == key).map(|a| a["value"].clone())
    };
    assert_eq!(attribute(turn, "superpi.harness").unwrap()["stringValue"], "superpi-code");
    assert!(attribute(&chats[0], "gen_ai.usage.input_tokens").is_some(), "{:?}", chats[0]);
    assert_eq!(attribute(&tools[0], "gen_ai.tool.name").unwrap()["stringValue"], "ls");
    let text = serde_json::to_string(&spans).unwrap();
    assert!(!text.contains("@tool"), "prompts are never recorded");
}

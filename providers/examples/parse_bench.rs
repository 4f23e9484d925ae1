//! Prints figures of the provider layer; asserts nothing.
//!
//! `cargo run --release -p superpi-providers --example parse_bench`
//!
//! 1. Parse throughput (MB/s, events/s) of a large stream in each wire's format (OpenAI Chat
//!    Completions, Anthropic, Gemini, OpenAI's Responses API), fed in 16 KiB
//!    pieces through the SSE decoder, the vendor parser and the stream builder.
//! 2. The mock model's `@deltas 1000000`, events/s.
//! 3. The time the provider layer adds between a chunk reaching the socket and its event leaving
//!    the provider (p50, p99), against a local server that writes one event every millisecond.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, reason = "a benchmark binary")]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use superpi_proto::Message;
use superpi_providers::openai_responses::RESPONSES;
use superpi_providers::vendor::wire_api;
use superpi_providers::{
    MockProvider, ModelRequest, Provider, ProviderKind, ProvidersConfig, StreamEvent, parse_recorded_by, resolve,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const TARGET_BYTES: usize = 32 * 1024 * 1024;
const PIECE: usize = 16 * 1024;

fn openai_body() -> Vec<u8> {
    let mut out = String::new();
    let mut i = 0u64;
    while out.len() < TARGET_BYTES {
        let chunk = json!({"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"content": format!("token {i} ")}, "finish_reason": null}]});
        out.push_str(&format!("data: {chunk}\n\n"));
        i += 1;
    }
    let end = json!({"id": "chatcmpl-b", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    out.push_str(&format!("data: {end}\n\ndata: [DONE]\n\n"));
    out.into_bytes()
}

fn anthropic_body() -> Vec<u8> {
    let mut out = String::new();
    let event = |out: &mut String, value: serde_json::Value| {
        out.push_str(&format!("event: {}\ndata: {value}\n\n", value["type"].as_str().unwrap_or("")));
    };
    event(
        &mut out,
        json!({"type": "message_start", "message": {"id": "msg_b", "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    );
    event(&mut out, json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
    let mut i = 0u64;
    while out.len() < TARGET_BYTES {
        event(
            &mut out,
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("token {i} ")}}),
        );
        i += 1;
    }
    event(&mut out, json!({"type": "content_block_stop", "index": 0}));
    event(
        &mut out,
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": i}}),
    );
    event(&mut out, json!({"type": "message_stop"}));
    out.into_bytes()
}

fn gemini_body() -> Vec<u8> {
    let mut out = String::new();
    let mut i = 0u64;
    while out.len() < TARGET_BYTES {
        let chunk = json!({"candidates": [{"content": {"parts": [{"text": format!("token {i} ")}], "role": "model"}, "index": 0}],
            "modelVersion": "gemini-2.5-flash", "responseId": "resp-b"});
        out.push_str(&format!("data: {chunk}\r\n\r\n"));
        i += 1;
    }
    let end = json!({"candidates": [{"content": {"parts": [{"text": "."}], "role": "model"}, "finishReason": "STOP"}]});
    out.push_str(&format!("data: {end}\r\n\r\n"));
    out.into_bytes()
}

fn responses_body() -> Vec<u8> {
    let mut out = String::new();
    let event = |out: &mut String, value: serde_json::Value| {
        out.push_str(&format!("event: {}\ndata: {value}\n\n", value["type"].as_str().unwrap_or("")));
    };
    event(
        &mut out,
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_b", "status": "in_progress"}}),
    );
    event(
        &mut out,
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {"type": "message", "id": "msg_b", "role": "assistant", "status": "in_progress", "content": []}}),
    );
    let mut i = 0u64;
    while out.len() < TARGET_BYTES {
        event(
            &mut out,
            json!({"type": "response.output_text.delta", "sequence_number": i + 2, "item_id": "msg_b", "output_index": 0,
                   "content_index": 0, "delta": format!("token {i} "), "logprobs": []}),
        );
        i += 1;
    }
    event(
        &mut out,
        json!({"type": "response.output_item.done", "sequence_number": i + 2, "output_index": 0,
               "item": {"type": "message", "id": "msg_b", "role": "assistant", "status": "completed", "content": []}}),
    );
    event(
        &mut out,
        json!({"type": "response.completed", "sequence_number": i + 3, "response": {"id": "resp_b", "status": "completed",
               "usage": {"input_tokens": 1, "output_tokens": i}}}),
    );
    out.into_bytes()
}

fn parse_throughput() {
    println!("parse throughput ({} MiB per stream, {} KiB pieces, best of 3):", TARGET_BYTES >> 20, PIECE >> 10);
    for (name, api, body) in [
        ("openai", wire_api(ProviderKind::Openai), openai_body()),
        ("anthropic", wire_api(ProviderKind::Anthropic), anthropic_body()),
        ("gemini", wire_api(ProviderKind::Gemini), gemini_body()),
        ("responses", &RESPONSES, responses_body()),
    ] {
        let mut best = Duration::MAX;
        let mut events = 0;
        for _ in 0..3 {
            let started = Instant::now();
            let parsed = parse_recorded_by(api, body.chunks(PIECE));
            best = best.min(started.elapsed());
            events = parsed.len();
            assert!(matches!(parsed.last(), Some(StreamEvent::Done(_))), "{name}: {:?}", parsed.last());
        }
        let seconds = best.as_secs_f64();
        println!(
            "  {name:<10} {:>8.1} MB/s  {:>10.0} events/s  ({} bytes, {events} events, {:.1} ms)",
            body.len() as f64 / seconds / 1e6,
            events as f64 / seconds,
            body.len(),
            seconds * 1e3
        );
    }
}

async fn mock_deltas() {
    let request = ModelRequest {
        model: "mock".into(),
        messages: vec![Message::user_text("@deltas 1000000")],
        ..Default::default()
    };
    let started = Instant::now();
    let mut stream = MockProvider::new().stream(request);
    let mut events = 0u64;
    while stream.next().await.is_some() {
        events += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "mock @deltas 1000000: {events} events in {:.1} ms, {:.0} events/s",
        seconds * 1e3,
        events as f64 / seconds
    );
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Serves one OpenAI stream whose deltas carry the time (ns since `epoch`) they were written.
async fn timed_server(events: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let mut seen = Vec::new();
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(head) = text.find("\r\n\r\n") {
                let length = text[..head]
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(0);
                if seen.len() >= head + 4 + length {
                    break;
                }
            }
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        let send = |data: String| {
            let framed = format!("{:x}\r\n{data}\r\n", data.len());
            framed.into_bytes()
        };
        for _ in 0..events {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let stamp = epoch().elapsed().as_nanos().to_string();
            let chunk =
                json!({"id": "t", "choices": [{"index": 0, "delta": {"content": stamp}, "finish_reason": null}]});
            socket.write_all(&send(format!("data: {chunk}\n\n"))).await.unwrap();
        }
        let end = json!({"id": "t", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        socket.write_all(&send(format!("data: {end}\n\ndata: [DONE]\n\n"))).await.unwrap();
        socket.write_all(b"0\r\n\r\n").await.unwrap();
    });
    base
}

async fn added_latency() {
    let events = 2000;
    let base = timed_server(events).await;
    let mut config = ProvidersConfig::default();
    config.apply_env(|name| match name {
        "OPENAI_BASE_URL" => Some(base.clone()),
        _ => None,
    });
    let provider = resolve("gpt-4o-mini", &config).unwrap();
    let request = ModelRequest { messages: vec![Message::user_text("time")], ..Default::default() };
    let mut stream = provider.stream(request);
    let mut latencies = Vec::with_capacity(events);
    while let Some(event) = stream.next().await {
        if let StreamEvent::TextDelta { delta, .. } = event {
            let now = epoch().elapsed().as_nanos();
            if let Ok(sent) = delta.parse::<u128>() {
                latencies.push(now.saturating_sub(sent) as f64 / 1e3);
            }
        }
    }
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q) as usize).copied().unwrap_or(f64::NAN);
    println!(
        "socket write to provider event over 127.0.0.1 ({} events): p50 {:.0} µs, p99 {:.0} µs",
        latencies.len(),
        at(0.5),
        at(0.99)
    );
}

#[tokio::main]
async fn main() {
    epoch();
    parse_throughput();
    mock_deltas().await;
    added_latency().await;
}

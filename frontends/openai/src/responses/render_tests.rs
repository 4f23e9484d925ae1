use super::*;
use crate::render::{RenderOptions, Renderer};
use superpi_proto::{ContentBlock, Event, Role, Usage as KUsage};

const C: i64 = 4;
const T: i64 = 9;

fn meta() -> ResponseMeta {
    ResponseMeta {
        id: "resp_4_9".into(),
        created_at: 1700,
        model: "superpi-code".into(),
        instructions: Some("be brief".into()),
        previous_response_id: Some("resp_4_8".into()),
        metadata: None,
        text_format: None,
    }
}

/// The kernel's events through the chat renderer and then this one, as the route runs them.
fn run(events: &[Event]) -> (Vec<StreamEvent>, ResponsesRenderer) {
    let mut chat = Renderer::new(RenderOptions {
        id: "chatcmpl-4-9".into(),
        created: 1700,
        model: "superpi-code".into(),
        include_usage: true,
        turn_id: T,
    });
    let mut r = ResponsesRenderer::new(meta());
    let mut out = r.start();
    out.extend(r.chunks(&chat.start()));
    for event in events {
        out.extend(r.chunks(&chat.render(event)));
        if chat.is_finished() {
            out.extend(r.end(chat.failure().cloned()));
        }
    }
    if !chat.is_finished() {
        out.extend(r.chunks(&chat.flush()));
        out.extend(r.end(chat.failure().cloned()));
    }
    (out, r)
}

fn kinds(events: &[StreamEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind).collect()
}

fn assistant(content: Vec<ContentBlock>) -> Event {
    Event::message_completed(C, Some(T), Role::Assistant, content, None)
}

fn usage(input: u64, output: u64) -> Event {
    let u = KUsage { input_tokens: input, output_tokens: output, ..Default::default() };
    Event::usage_updated(C, Some(T), u, u)
}

/// What a client that follows the events (as the SDKs' accumulators do) ends up with: each
/// item's text from its deltas, checked against its `.done` events and its final item.
fn check_consistent(events: &[StreamEvent]) {
    for (n, e) in events.iter().enumerate() {
        assert_eq!(e.data["sequence_number"], n as u64, "{:?}", e);
        assert_eq!(e.data["type"], e.kind);
        assert!(e.data.get("error").is_none(), "a top-level `error` key makes the SDKs throw: {:?}", e);
    }
    let mut open: Option<(u64, String, String)> = None; // output_index, id, text
    let mut closed = 0u64;
    for e in events {
        let d = &e.data;
        match e.kind {
            "response.output_item.added" => {
                assert!(open.is_none(), "two items open");
                assert_eq!(d["output_index"], closed);
                open = Some((closed, d["item"]["id"].as_str().unwrap().to_string(), String::new()));
            }
            "response.output_text.delta" | "response.reasoning_summary_text.delta" => {
                let (index, id, text) = open.as_mut().expect("a delta outside an item");
                assert_eq!((&d["output_index"], d["item_id"].as_str().unwrap()), (&json!(*index), id.as_str()));
                text.push_str(d["delta"].as_str().unwrap());
            }
            "response.output_text.done" | "response.reasoning_summary_text.done" => {
                assert_eq!(d["text"].as_str().unwrap(), open.as_ref().unwrap().2);
            }
            "response.output_item.done" => {
                let (index, id, text) = open.take().expect("done without added");
                assert_eq!((&d["output_index"], d["item"]["id"].as_str().unwrap()), (&json!(index), id.as_str()));
                let item = &d["item"];
                let shown = match item["type"].as_str().unwrap() {
                    "message" => &item["content"][0]["text"],
                    _ => &item["summary"][0]["text"],
                };
                assert_eq!(shown.as_str().unwrap(), text);
                closed += 1;
            }
            _ => {}
        }
    }
    assert!(open.is_none(), "an item left open");
    let last = events.last().unwrap();
    assert_eq!(last.data["response"]["output"].as_array().unwrap().len() as u64, closed);
}

#[test]
fn an_answer_with_thinking_and_usage() {
    let (events, r) = run(&[
        Event::turn_started(C, T),
        Event::thinking_delta(C, Some(T), 0, "hmm"),
        Event::text_delta(C, Some(T), 1, "Hel"),
        Event::text_delta(C, Some(T), 1, "lo"),
        assistant(vec![
            ContentBlock::Thinking { thinking: "hmm".into(), signature: None, redacted: false },
            ContentBlock::text("Hello"),
        ]),
        usage(10, 3),
        Event::turn_completed(C, T, None, "end_turn"),
    ]);
    check_consistent(&events);
    assert_eq!(
        kinds(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let created = &events[0].data["response"];
    assert_eq!(
        (&created["status"], &created["output"], &created["usage"]),
        (&json!("in_progress"), &json!([]), &Value::Null)
    );
    assert_eq!(created["id"], "resp_4_9");
    assert_eq!((&created["instructions"], &created["previous_response_id"]), (&json!("be brief"), &json!("resp_4_8")));
    let done = r.finished();
    assert_eq!(done, events.last().unwrap().data["response"]);
    assert_eq!(done["status"], "completed");
    assert!(done["completed_at"].is_i64());
    assert_eq!(
        done["output"][0],
        json!({"type": "reasoning", "id": "rs_4_9_0", "status": "completed",
        "summary": [{"type": "summary_text", "text": "hmm"}]})
    );
    // The chat renderer's line break after the thinking, sent with the answer text's end,
    // opens no item of its own.
    assert_eq!(done["output"].as_array().unwrap().len(), 2);
    assert_eq!(
        done["output"][1],
        json!({"type": "message", "id": "msg_4_9_1", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": "Hello", "annotations": [], "logprobs": []}]})
    );
    assert_eq!(done["usage"]["input_tokens"], 10);
    assert_eq!(done["usage"]["output_tokens"], 3);
    assert_eq!(done["usage"]["total_tokens"], 13);
    assert_eq!(done["usage"]["input_tokens_details"]["cached_tokens"], 0);
    assert_eq!(done["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
    assert_eq!(done["error"], Value::Null);
}

#[test]
fn tool_activity_is_a_reasoning_item_between_messages() {
    let (events, r) = run(&[
        Event::turn_started(C, T),
        Event::text_delta(C, Some(T), 0, "Looking."),
        assistant(vec![ContentBlock::text("Looking.")]),
        Event::tool_started(C, Some(T), "c1", "ls", json!({"path": "."}), vec![]),
        Event::tool_completed(C, Some(T), "c1", "ls", false, json!("a\nb")),
        Event::tool_blocked(C, Some(T), "c2", "write", "plan mode"),
        Event::tool_completed(C, Some(T), "c2", "write", true, json!("blocked")),
        Event::text_delta(C, Some(T), 0, "Found a and b."),
        assistant(vec![ContentBlock::text("Found a and b.")]),
        Event::turn_completed(C, T, None, "end_turn"),
    ]);
    check_consistent(&events);
    let done = r.finished();
    let types: Vec<&str> = done["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["message", "reasoning", "message"]);
    assert_eq!(done["output"][0]["content"][0]["text"], "Looking.");
    let tools = done["output"][1]["summary"][0]["text"].as_str().unwrap();
    assert_eq!(tools, "[tool] ls {\"path\":\".\"}\n[tool] ls done\n[tool] write blocked: plan mode\n");
    // The later text is an item of its own, without the chat route's paragraph break.
    assert_eq!(done["output"][2]["content"][0]["text"], "Found a and b.");
    // No function call ever reaches the client.
    assert!(events.iter().all(|e| !e.kind.contains("function_call") && e.data["item"]["type"] != "function_call"));
}

#[test]
fn a_failed_turn_ends_with_response_failed() {
    let (events, r) = run(&[
        Event::turn_started(C, T),
        Event::text_delta(C, Some(T), 0, "partial"),
        Event::turn_error(C, T, "the model broke"),
    ]);
    check_consistent(&events);
    let last = events.last().unwrap();
    assert_eq!(last.kind, "response.failed");
    let response = &last.data["response"];
    assert_eq!(response["status"], "failed");
    assert_eq!(response["error"], json!({"code": "server_error", "message": "the model broke"}));
    assert_eq!(response["output"][0]["content"][0]["text"], "partial");
    // The item open at the failure is left incomplete.
    assert_eq!(response["output"][1]["summary"][0]["text"], "[error] the model broke\n");
    assert_eq!(response["output"][1]["status"], "incomplete");
    assert!(matches!(r.ending(), Some(Ending::Failed(f)) if f.code == "turn_failed"));
    assert_eq!(r.finished()["status"], "failed");
}

#[test]
fn a_lost_kernel_fails_the_response() {
    let (events, _) = run(&[Event::turn_started(C, T), Event::text_delta(C, Some(T), 0, "one")]);
    check_consistent(&events);
    let last = events.last().unwrap();
    assert_eq!(last.kind, "response.failed");
    assert!(last.data["response"]["error"]["message"].as_str().unwrap().contains("lost"));
}

#[test]
fn the_output_limit_is_an_incomplete_response() {
    let (events, r) = run(&[
        Event::turn_started(C, T),
        Event::text_delta(C, Some(T), 0, "cut"),
        assistant(vec![ContentBlock::text("cut")]),
        Event::turn_completed(C, T, None, "max_tokens"),
    ]);
    check_consistent(&events);
    assert_eq!(events.last().unwrap().kind, "response.incomplete");
    let done = r.finished();
    assert_eq!(
        (&done["status"], &done["incomplete_details"]),
        (&json!("incomplete"), &json!({"reason": "max_output_tokens"}))
    );
    assert_eq!(done["output"][0]["status"], "incomplete");
}

#[test]
fn a_cancelled_turn_completes_with_a_note() {
    let (events, r) =
        run(&[Event::turn_started(C, T), Event::text_delta(C, Some(T), 0, "one"), Event::turn_cancelled(C, T)]);
    check_consistent(&events);
    assert_eq!(events.last().unwrap().kind, "response.completed");
    assert_eq!(r.finished()["output"][1]["summary"][0]["text"], "[cancelled]\n");
}

#[test]
fn an_empty_answer_has_no_items_and_end_runs_once() {
    let (events, mut r) = run(&[Event::turn_started(C, T), Event::turn_completed(C, T, None, "end_turn")]);
    check_consistent(&events);
    assert_eq!(kinds(&events), ["response.created", "response.in_progress", "response.completed"]);
    assert!(r.end(None).is_empty());
    assert_eq!(r.finished()["output"], json!([]));
}

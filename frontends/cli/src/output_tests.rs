use serde_json::json;
use superpi_proto::Usage;

use super::*;

const C: i64 = 3;
const T: i64 = 9;

fn assistant(text: &str, usage: Option<Usage>) -> Event {
    Event::message_completed(C, Some(T), Role::Assistant, vec![ContentBlock::text(text)], usage)
}

#[test]
fn a_tool_using_turn_folds_into_one_result() {
    let mut r = TurnResult::new(C, T);
    assert_eq!(r.to_json()["status"], "running");
    for event in [
        Event::turn_started(C, T),
        Event::text_delta(C, Some(T), 0, "Let me look."),
        assistant("Let me look.", Some(Usage { input_tokens: 10, output_tokens: 2, ..Default::default() })),
        Event::tool_started(C, Some(T), "c1", "ls", json!({"path": "."}), vec![]),
        Event::tool_completed(C, Some(T), "c1", "ls", false, json!("a.txt")),
        // Another turn's event is not this turn's.
        Event::message_completed(C, Some(T + 1), Role::Assistant, vec![ContentBlock::text("other")], None),
        assistant("One file.", Some(Usage { input_tokens: 20, output_tokens: 3, ..Default::default() })),
        Event::turn_completed(C, T, None, "end_turn"),
    ] {
        r.take(&event);
    }
    assert_eq!(r.end(), Some(TurnEnd::Completed));
    assert_eq!(
        r.to_json(),
        json!({
            "type": "result", "status": "completed", "is_error": false, "conversation_id": C, "turn_id": T,
            "result": "Let me look.\n\nOne file.", "stop_reason": "end_turn", "error": null, "tool_calls": 1,
            "usage": {"input_tokens": 30, "output_tokens": 5, "cached_input_tokens": 0},
            "cost_usd": null, "total_cost_usd": null,
        })
    );
}

#[test]
fn usage_updated_wins_over_message_usage_and_failures_are_errors() {
    let mut r = TurnResult::new(C, T);
    r.take(&assistant("x", Some(Usage { input_tokens: 1, output_tokens: 1, ..Default::default() })));
    r.take(&Event::usage_updated(
        C,
        Some(T),
        Usage { input_tokens: 7, output_tokens: 4, cached_input_tokens: 5, cache_write_tokens: 0 },
        Usage { input_tokens: 70, output_tokens: 40, cached_input_tokens: 50, cache_write_tokens: 0 },
    ));
    r.take(&Event::turn_error(C, T, "provider said 500"));
    let out = r.to_json();
    assert_eq!((&out["status"], &out["is_error"]), (&json!("failed"), &json!(true)));
    assert_eq!(out["error"], "provider said 500");
    assert_eq!(out["usage"], json!({"input_tokens": 7, "output_tokens": 4, "cached_input_tokens": 5}));
    assert_eq!((&out["cost_usd"], &out["total_cost_usd"]), (&Value::Null, &Value::Null));
    let mut r = TurnResult::new(C, T);
    r.take(&Event::turn_cancelled(C, T));
    assert_eq!(r.to_json()["status"], "cancelled");
}

#[test]
fn the_result_says_what_the_turn_and_the_conversation_cost() {
    let mut r = TurnResult::new(C, T);
    let usage = Usage { input_tokens: 7, output_tokens: 4, ..Default::default() };
    let priced = |call, turn, total| {
        Event::usage_updated(C, Some(T), usage, usage).with_cost(superpi_proto::Cost {
            call: Some(call),
            turn: Some(turn),
            total: Some(total),
        })
    };
    r.take(&priced(0.5, 0.5, 2.0));
    r.take(&priced(0.25, 0.75, 2.25));
    r.take(&Event::turn_completed(C, T, Some("done".into()), "end_turn"));
    let out = r.to_json();
    assert_eq!((&out["cost_usd"], &out["total_cost_usd"]), (&json!(0.75), &json!(2.25)));
}

#[test]
fn input_lines_are_prompt_objects() {
    assert_eq!(parse_input_line(r#"{"prompt": "hi there"}"#), Ok("hi there".into()));
    assert!(parse_input_line("hi there").is_err());
    assert!(parse_input_line(r#"{"prompt": "  "}"#).is_err());
    assert!(parse_input_line(r#"{"prompt": "x", "other": 1}"#).is_err());
    assert_eq!(invalid_input("bad")["status"], "invalid_input");
}

#[test]
fn stream_lines_read_back_as_the_same_events() {
    let event = Event::tool_started(C, Some(T), "c1", "ls", json!({"path": "."}), vec![]);
    let line = event_line(&event);
    assert!(!line.contains('\n'));
    assert_eq!(Event::from_json(&line).unwrap(), event);
}

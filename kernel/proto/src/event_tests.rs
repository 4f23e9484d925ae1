use super::*;
use serde_json::json;

fn one_of_each() -> Vec<Event> {
    let mut req = Map::new();
    req.insert("kind".into(), json!("question"));
    req.insert("questions".into(), json!([{"id": "q1", "text": "Which?"}]));
    vec![
        Event::turn_started(1, 2),
        Event::turn_completed(1, 2, Some("done".into()), "end_turn"),
        Event::turn_error(1, 2, "boom"),
        Event::turn_cancelled(1, 2),
        Event::text_delta(1, Some(2), 0, "he"),
        Event::thinking_delta(1, Some(2), 0, "hm"),
        Event::toolcall_delta(1, Some(2), 1, Some("{\"a\"".into()), json!({}), Some("c1".into()), Some("ls".into())),
        Event::message_completed(
            1,
            Some(2),
            Role::Assistant,
            vec![ContentBlock::text("hi")],
            Some(Usage { input_tokens: 3, output_tokens: 4, ..Default::default() }),
        ),
        Event::stream_reset(1, Some(2), 500),
        Event::tool_started(1, Some(2), "c1", "ls", json!({"path": "."}), vec!["path".into()]),
        Event::tool_output(1, Some(2), "c1", "bash", "line\n"),
        Event::tool_blocked(1, Some(2), "c1", "write", "outside the workspace"),
        Event::tool_completed(1, Some(2), "c1", "ls", false, json!("a\nb")),
        Event::permission_request(
            1,
            Some(2),
            PermissionRequestFields {
                request_id: "r1".into(),
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                arguments: json!({"command": "rm -rf x"}),
                reason: "not in the allow list".into(),
                risk: Some("high".into()),
            },
        ),
        Event::ui_request(1, Some(2), "r2", req),
        Event::ui_resolved(1, Some(2), "r2", json!({"option_id": "allow_once"})),
        Event::state_changed(1, Some(2), "streaming"),
        Event::mode_changed(1, "plan", Some("auto".into())),
        Event::usage_updated(
            1,
            Some(2),
            Usage { input_tokens: 1, output_tokens: 2, cached_input_tokens: 1, cache_write_tokens: 0 },
            Usage { input_tokens: 10, output_tokens: 20, cached_input_tokens: 7, cache_write_tokens: 0 },
        )
        .with_context(300, 1000),
        Event::plan_updated(1, Some(2), vec![PlanEntry { id: "1".into(), text: "read".into(), completed: false }]),
        Event::compaction_completed(1, None, json!(17), Some("summary".into())),
        Event::context_cleared(1),
        Event::notice(1, None, "warning", "turn 3 was interrupted"),
        Event::subagent_started(1, Some(2), 5, "explorer", "look around"),
        Event::subagent_finished(1, Some(2), 5, "completed", Some("found it".into())),
        Event::handoff(1, Some(2), "superpi-planner", "superpi-code", Some("the plan is ready".into())),
        Event::artifact_created(1, Some(2), "call_1", "report.csv", 12, "text/csv"),
    ]
}

#[test]
fn every_event_type_round_trips_through_the_wire() {
    let events = one_of_each();
    let names: Vec<&str> = events.iter().map(Event::type_name).collect();
    assert_eq!(names, EVENT_TYPES, "one sample per known type, in table order");
    for (i, mut ev) in events.into_iter().enumerate() {
        ev.seq = i as u64 + 1;
        let wire = ev.to_wire();
        assert_eq!(wire["type"], json!(ev.type_name()));
        assert_eq!(wire["v"], json!(1));
        assert_eq!(wire["conversation_id"], json!(1));
        assert_eq!(wire["seq"], json!(i + 1));
        assert!(wire.get("data").is_none(), "payload is flat");
        let back = Event::from_wire(wire).unwrap();
        assert_eq!(back, ev);
        assert!(!matches!(back.body, EventBody::Unknown(_)));
        let back = Event::from_json(&ev.to_json()).unwrap();
        assert_eq!(back, ev);
    }
}

#[test]
fn payload_keys_sit_at_the_top_level() {
    let wire = Event::text_delta(4, Some(5), 0, "abc").to_wire();
    assert_eq!(wire["delta"], json!("abc"));
    assert_eq!(wire["index"], json!(0));
    assert_eq!(wire["turn_id"], json!(5));
    let wire = Event::ui_request(4, None, "q", {
        let mut m = Map::new();
        m.insert("kind".into(), json!("question"));
        m
    })
    .to_wire();
    assert_eq!(wire["kind"], json!("question"));
    assert_eq!(wire["request_id"], json!("q"));
}

#[test]
fn an_older_map_reads_as_version_one_without_a_turn() {
    let ev = Event::from_wire(json!({"type": "text_delta", "conversation_id": 3, "index": 0, "delta": "x"})).unwrap();
    assert_eq!(ev.v, 1);
    assert_eq!(ev.turn_id, None);
    assert_eq!(ev.body, EventBody::TextDelta { index: 0, delta: "x".into() });
}

#[test]
fn usage_stored_before_cached_tokens_were_counted_reads_as_none_cached() {
    let wire = json!({"type": "usage_updated", "conversation_id": 3, "input_tokens": 5, "output_tokens": 1,
                      "total_input_tokens": 9, "total_output_tokens": 2});
    match Event::from_wire(wire).unwrap().body {
        EventBody::UsageUpdated { cached_input_tokens, total_cached_input_tokens, total_input_tokens, .. } => {
            assert_eq!((cached_input_tokens, total_cached_input_tokens, total_input_tokens), (0, 0, 9));
        }
        other => panic!("expected usage_updated, got {other:?}"),
    }
    let usage: Usage = serde_json::from_value(json!({"input_tokens": 5, "output_tokens": 1})).unwrap();
    assert_eq!(usage, Usage { input_tokens: 5, output_tokens: 1, cached_input_tokens: 0, cache_write_tokens: 0 });
}

#[test]
fn an_unknown_type_is_kept_with_its_map() {
    let wire = json!({"v": 1, "type": "hologram_beamed", "conversation_id": 3, "turn_id": null, "seq": 4, "timestamp_ms": 5, "beam": {"x": 1}});
    let ev = Event::from_wire(wire).unwrap();
    assert_eq!(ev.type_name(), "hologram_beamed");
    match &ev.body {
        EventBody::Unknown(map) => assert_eq!(map["beam"], json!({"x": 1})),
        other => panic!("expected unknown, got {other:?}"),
    }
    let again = ev.to_wire();
    assert_eq!(again["beam"], json!({"x": 1}));
    assert_eq!(again["type"], json!("hologram_beamed"));
    assert_eq!(again["seq"], json!(4));
}

#[test]
fn maps_without_a_type_are_errors() {
    assert!(Event::from_wire(json!({"conversation_id": 1})).is_err());
    assert!(Event::from_wire(json!([1, 2])).is_err());
    assert!(Event::from_json("{").is_err());
}

#[test]
fn permission_requests_carry_the_four_acp_options() {
    let kinds: Vec<String> = permission_options().into_iter().map(|o| o.kind).collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    let ids: Vec<String> = lasting_permission_options(true).into_iter().map(|o| o.option_id).collect();
    assert_eq!(ids, ["allow_always_project", "allow_always_user"]);
    assert_eq!(lasting_permission_options(false).len(), 1, "no project without a workspace");
    assert!(is_permission_option("allow_always_user") && !is_permission_option("allow_always_forever"));
}

#[test]
fn a_key_given_twice_counts_once_and_the_event_survives_writing() {
    // Found by the frame fuzz target: a known type with a duplicate key read as Unknown and
    // wrote back as the known type.
    let text = r#"{"conversation_id":1,"turn_id":2,"type":"turn_completed","stop_reason":"end_turn","result":"x","result":"done"}"#;
    let event = Event::from_json(text).unwrap();
    assert_eq!(event.body, EventBody::TurnCompleted { stop_reason: "end_turn".into(), result: Some("done".into()) });
    assert_eq!(Event::from_json(&event.to_json()).unwrap(), event);
}

#[test]
fn a_number_survives_writing_to_its_last_bit() {
    // Found by the event fuzz target: without serde_json's float_roundtrip a number far past
    // u64 read one bit off its nearest f64, and its written form read back one bit off again.
    let text = r#"{"v":1,"conversation_id":1,"seq":8,"type":"a_future_event","at":17096135242731796135242735}"#;
    let event = Event::from_json(text).unwrap();
    let EventBody::Unknown(fields) = &event.body else { panic!("{event:?}") };
    assert_eq!(fields["at"].as_f64(), Some(17_096_135_242_731_796_135_242_735.0), "the nearest f64");
    assert_eq!(Event::from_json(&event.to_json()).unwrap(), event);
    for written in ["0.1", "1e-7", "2.2250738585072014e-308", "9007199254740993.0", "1.7976931348623157e308"] {
        let number: serde_json::Value = serde_json::from_str(written).unwrap();
        let again: serde_json::Value = serde_json::from_str(&number.to_string()).unwrap();
        assert_eq!(again, number, "{written}");
    }
}

#[test]
fn an_envelope_key_given_twice_counts_the_last_as_a_body_key_does() {
    let text = r#"{"seq":1,"conversation_id":9,"type":"a_future_event","b":1,"seq":7,"a":2,"b":3,"conversation_id":4}"#;
    let event = Event::from_json(text).unwrap();
    assert_eq!((event.seq, event.conversation_id), (7, 4));
    let EventBody::Unknown(fields) = &event.body else { panic!("{event:?}") };
    assert_eq!((fields.len(), &fields["b"], &fields["a"]), (3, &json!(3), &json!(2)));
    assert!(Event::from_json(r#"{"conversation_id":"one","type":"turn_started"}"#).is_err());
    assert!(Event::from_json(r#"{"conversation_id":1,"seq":-1,"type":"turn_started"}"#).is_err());
}

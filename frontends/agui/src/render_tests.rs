//! The renderer's unit tests: whole-object assertions of each event type's AG-UI output. Over
//! 500 lines on purpose: one file per module under test (the generated-turn properties are in
//! `render_props_tests.rs`).
use serde_json::{Value, json};
use superpi_proto::event::{PermissionRequestFields, PlanEntry};
use superpi_proto::method::{ConversationInfo, HistoryResult};
use superpi_proto::{ContentBlock, Entry, EntryKind, Event, Message, Role, Usage};

use super::*;
use crate::wire::{AguiEvent as E, AguiMessage, Outcome};

const CONV: i64 = 7;
const TURN: i64 = 3;

fn info(status: &str) -> ConversationInfo {
    ConversationInfo {
        conversation_id: CONV,
        harness: "superpi-code".into(),
        model: "mock".into(),
        mode: "accept-edits".into(),
        max_mode: "accept-edits".into(),
        effort: None,
        workspace: Some("/w".into()),
        title: None,
        parent_id: None,
        created_at_ms: 0,
        status: status.into(),
        head_seq: 0,
        created: true,
        rules_files: Vec::new(),
        cost_usd: None,
    }
}

/// A history of `entries`, with its last compaction and plan events.
fn history(entries: Vec<Entry>, last_compaction: Option<Event>, last_plan: Option<Event>) -> HistoryResult {
    HistoryResult { conversation: info("idle"), entries, more: false, last_compaction, last_plan }
}

/// An attached stream's opening as the transport writes it, with the snapshot of `history`.
fn attach(r: &mut Renderer, run_id: &str, history: &HistoryResult, running: bool) -> Vec<E> {
    let mut out = r.attach_start(run_id, history.last_plan.as_ref());
    let messages = crate::history::visible_messages(&history.entries, history.last_compaction.as_ref());
    out.push(E::MessagesSnapshot { messages });
    out.extend(r.attach_end(running));
    out
}

/// A snapshot in the middle of a stream as the transport writes it.
fn messages_snapshot(r: &mut Renderer, history: &HistoryResult, now_ms: u64) -> Vec<E> {
    let mut out = r.before_snapshot(now_ms);
    let messages = crate::history::visible_messages(&history.entries, history.last_compaction.as_ref());
    out.push(E::MessagesSnapshot { messages });
    out
}

fn renderer() -> Renderer {
    Renderer::new("thread-1", &info("idle"), RenderOptions::default())
}

fn seq(mut event: Event, seq: u64) -> Event {
    event.seq = seq;
    event
}

fn patch(ops: Value) -> json_patch::Patch {
    serde_json::from_value(ops).unwrap()
}

fn delta(ops: Value) -> E {
    E::StateDelta { delta: patch(ops) }
}

fn text_content(id: &str, delta: &str) -> E {
    E::TextMessageContent { message_id: id.into(), delta: delta.into() }
}

fn initial_state() -> Value {
    json!({
        "threadId": "thread-1",
        "conversationId": CONV,
        "harness": "superpi-code",
        "model": "mock",
        "mode": "accept-edits",
        "maxMode": "accept-edits",
        "status": "idle",
        "usage": {"inputTokens": 0, "outputTokens": 0, "totalInputTokens": 0, "totalOutputTokens": 0,
                  "cachedInputTokens": 0, "totalCachedInputTokens": 0},
        "plan": [],
        "pendingPermission": null,
    })
}

fn assistant(content: Vec<ContentBlock>) -> Event {
    Event::message_completed(CONV, Some(TURN), Role::Assistant, content, None)
}

#[test]
fn a_text_turn_streams_merged_content_and_ends_with_run_finished() {
    let mut r = renderer();
    assert_eq!(
        r.start_run("run-1"),
        vec![
            E::RunStarted { thread_id: "thread-1".into(), run_id: "run-1".into() },
            E::StateSnapshot { snapshot: initial_state() },
        ]
    );
    assert_eq!(
        r.render(&Event::turn_started(CONV, TURN), 0),
        vec![delta(json!([{"op": "replace", "path": "/status", "value": "running"}]))]
    );
    // The first delta goes at once; the next ones within 16 ms are held and merged.
    assert_eq!(
        r.render(&Event::text_delta(CONV, Some(TURN), 0, "Hel"), 100),
        vec![
            E::TextMessageStart { message_id: "msg-t3-1".into(), role: "assistant".into() },
            text_content("msg-t3-1", "Hel"),
        ]
    );
    assert_eq!(r.render(&Event::text_delta(CONV, Some(TURN), 0, "lo"), 105), vec![]);
    assert_eq!(r.deadline(), Some(116));
    assert_eq!(r.poll(110), vec![]);
    assert_eq!(r.render(&Event::text_delta(CONV, Some(TURN), 0, " wor"), 112), vec![]);
    assert_eq!(r.poll(116), vec![text_content("msg-t3-1", "lo wor")]);
    assert_eq!(r.deadline(), None);
    // Within the window of that flush: held again, then sent ahead of the end.
    assert_eq!(r.render(&Event::text_delta(CONV, Some(TURN), 0, "ld"), 120), vec![]);
    assert_eq!(
        r.render(&assistant(vec![ContentBlock::text("Hello world")]), 121),
        vec![text_content("msg-t3-1", "ld"), E::TextMessageEnd { message_id: "msg-t3-1".into() }]
    );
    // The operations of one object's keys come in the map's order, which serde_json's features
    // (unified across the workspace) decide: compared by path.
    let usage = r.render(
        &Event::usage_updated(
            CONV,
            Some(TURN),
            Usage { input_tokens: 5, output_tokens: 2, cached_input_tokens: 3, cache_write_tokens: 0 },
            Usage { input_tokens: 5, output_tokens: 2, cached_input_tokens: 3, cache_write_tokens: 0 },
        ),
        122,
    );
    let [E::StateDelta { delta: usage }] = usage.as_slice() else { panic!("{usage:?}") };
    let mut ops = serde_json::to_value(usage).unwrap().as_array().cloned().unwrap();
    ops.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    assert_eq!(
        Value::Array(ops),
        json!([
            {"op": "replace", "path": "/usage/cachedInputTokens", "value": 3},
            {"op": "replace", "path": "/usage/inputTokens", "value": 5},
            {"op": "replace", "path": "/usage/outputTokens", "value": 2},
            {"op": "replace", "path": "/usage/totalCachedInputTokens", "value": 3},
            {"op": "replace", "path": "/usage/totalInputTokens", "value": 5},
            {"op": "replace", "path": "/usage/totalOutputTokens", "value": 2},
        ])
    );
    assert_eq!(
        r.render(&Event::turn_completed(CONV, TURN, Some("Hello world".into()), "end_turn"), 130),
        vec![
            delta(json!([{"op": "replace", "path": "/status", "value": "idle"}])),
            E::RunFinished {
                thread_id: "thread-1".into(),
                run_id: "run-1".into(),
                result: Some(json!("Hello world")),
                outcome: Outcome::success(),
            },
        ]
    );
    assert!(!r.run_open());
}

#[test]
fn deltas_spread_wider_than_the_window_are_sent_one_by_one() {
    let mut r = renderer();
    r.start_run("run-1");
    let mut out = Vec::new();
    for (i, part) in ["a", "b", "c"].iter().enumerate() {
        out.extend(r.render(&Event::text_delta(CONV, Some(TURN), 0, *part), 1000 + 20 * i as u64));
    }
    assert_eq!(
        out,
        vec![
            E::TextMessageStart { message_id: "msg-t3-1".into(), role: "assistant".into() },
            text_content("msg-t3-1", "a"),
            text_content("msg-t3-1", "b"),
            text_content("msg-t3-1", "c"),
        ]
    );
}

#[test]
fn thinking_becomes_a_reasoning_span_closed_before_the_text() {
    let mut r = renderer();
    r.start_run("run-1");
    r.render(&Event::turn_started(CONV, TURN), 0);
    let mut out = r.render(&Event::thinking_delta(CONV, Some(TURN), 0, "Let me think"), 0);
    out.extend(r.render(&Event::text_delta(CONV, Some(TURN), 1, "Answer"), 40));
    out.extend(r.render(
        &assistant(vec![
            ContentBlock::Thinking { thinking: "Let me think".into(), signature: None, redacted: false },
            ContentBlock::text("Answer"),
        ]),
        50,
    ));
    assert_eq!(
        out,
        vec![
            E::ReasoningStart { message_id: "reasoning-t3-1".into() },
            E::ReasoningMessageStart { message_id: "reasoning-t3-1".into(), role: "reasoning".into() },
            E::ReasoningMessageContent { message_id: "reasoning-t3-1".into(), delta: "Let me think".into() },
            E::ReasoningMessageEnd { message_id: "reasoning-t3-1".into() },
            E::ReasoningEnd { message_id: "reasoning-t3-1".into() },
            E::TextMessageStart { message_id: "msg-t3-2".into(), role: "assistant".into() },
            text_content("msg-t3-2", "Answer"),
            E::TextMessageEnd { message_id: "msg-t3-2".into() },
        ]
    );
}

#[test]
fn held_text_goes_out_before_a_tool_call_opens() {
    let mut r = renderer();
    r.start_run("run-1");
    r.render(&Event::turn_started(CONV, TURN), 0);
    r.render(&Event::text_delta(CONV, Some(TURN), 0, "I'll "), 0);
    assert_eq!(r.render(&Event::text_delta(CONV, Some(TURN), 0, "look."), 3), vec![]);
    let call = |delta: &str, first: bool, t: u64, r: &mut Renderer| {
        r.render(
            &Event::toolcall_delta(
                CONV,
                Some(TURN),
                1,
                Some(delta.into()),
                Value::Null,
                first.then(|| "call-1".to_string()),
                first.then(|| "ls".to_string()),
            ),
            t,
        )
    };
    assert_eq!(
        call("{\"path\"", true, 5, &mut r),
        vec![
            text_content("msg-t3-1", "look."),
            E::TextMessageEnd { message_id: "msg-t3-1".into() },
            E::ToolCallStart {
                tool_call_id: "call-1".into(),
                tool_call_name: "ls".into(),
                parent_message_id: Some("msg-t3-1".into()),
            },
        ]
    );
    assert_eq!(call(": \".\"}", false, 8, &mut r), vec![]);
    assert_eq!(r.poll(21), vec![E::ToolCallArgs { tool_call_id: "call-1".into(), delta: "{\"path\": \".\"}".into() }]);
    assert_eq!(
        r.render(
            &assistant(vec![
                ContentBlock::text("I'll look."),
                ContentBlock::ToolCall { id: "call-1".into(), name: "ls".into(), arguments: json!({"path": "."}) },
            ]),
            30
        ),
        vec![E::ToolCallEnd { tool_call_id: "call-1".into() }]
    );
    // tool_started means the same thing (arguments complete): nothing more to send.
    assert_eq!(
        r.render(&Event::tool_started(CONV, Some(TURN), "call-1", "ls", json!({"path": "."}), vec![]), 31),
        vec![]
    );
    assert_eq!(
        r.render(&Event::tool_completed(CONV, Some(TURN), "call-1", "ls", false, json!("a.txt\nb.txt")), 40),
        vec![E::ToolCallResult {
            message_id: "tool-call-1".into(),
            tool_call_id: "call-1".into(),
            content: "a.txt\nb.txt".into(),
            role: "tool".into(),
        }]
    );
}

#[test]
fn a_hooks_rewrite_and_an_artifact_are_custom_events() {
    let mut r = renderer();
    r.start_run("run-1");
    r.render(&Event::turn_started(CONV, TURN), 0);
    r.render(
        &assistant(vec![ContentBlock::ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: json!({"command": "rm -rf x"}),
        }]),
        1,
    );
    let started =
        Event::tool_started(CONV, Some(TURN), "c1", "bash", json!({"command": "echo no"}), vec!["command".into()]);
    assert_eq!(
        r.render(&started, 2),
        vec![E::Custom {
            name: "superpi.tool_rewritten".into(),
            value: json!({"toolCallId": "c1", "toolName": "bash", "overwrittenKeys": ["command"],
                "arguments": {"command": "echo no"}}),
        }]
    );
    assert_eq!(
        r.render(&Event::artifact_created(CONV, Some(TURN), "c2", "t.csv", 8, "text/csv"), 3),
        vec![E::Custom {
            name: "superpi.artifact".into(),
            value: json!({"name": "t.csv", "bytes": 8, "mediaType": "text/csv",
                "url": format!("/v1/artifacts/{CONV}/t.csv"), "toolCallId": "c2", "conversationId": CONV}),
        }]
    );
}

#[test]
fn an_unstreamed_message_is_sent_whole_when_it_completes() {
    let mut r = renderer();
    r.start_run("run-1");
    r.render(&Event::turn_started(CONV, TURN), 0);
    assert_eq!(
        r.render(
            &assistant(vec![
                ContentBlock::text("Running it."),
                ContentBlock::ToolCall {
                    id: "c9".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "rm -rf x"}),
                },
            ]),
            0
        ),
        vec![
            E::TextMessageStart { message_id: "msg-t3-1".into(), role: "assistant".into() },
            text_content("msg-t3-1", "Running it."),
            E::TextMessageEnd { message_id: "msg-t3-1".into() },
            E::ToolCallStart {
                tool_call_id: "c9".into(),
                tool_call_name: "bash".into(),
                parent_message_id: Some("msg-t3-1".into()),
            },
            E::ToolCallArgs { tool_call_id: "c9".into(), delta: "{\"command\":\"rm -rf x\"}".into() },
            E::ToolCallEnd { tool_call_id: "c9".into() },
        ]
    );
}

#[test]
fn a_permission_question_is_a_custom_event_and_pending_state() {
    let mut r = renderer();
    r.start_run("run-1");
    r.render(&Event::turn_started(CONV, TURN), 0);
    r.render(&Event::tool_started(CONV, Some(TURN), "c9", "bash", json!({"command": "make"}), vec![]), 0);
    let request = Event::permission_request(
        CONV,
        Some(TURN),
        PermissionRequestFields {
            request_id: "q1".into(),
            tool_call_id: "c9".into(),
            tool_name: "bash".into(),
            arguments: json!({"command": "make"}),
            reason: "not in the allow list".into(),
            risk: None,
        },
    );
    let question = json!({
        "requestId": "q1",
        "toolCallId": "c9",
        "toolName": "bash",
        "arguments": {"command": "make"},
        "reason": "not in the allow list",
        "options": [
            {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow_always", "name": "Allow always", "kind": "allow_always"},
            {"optionId": "reject_once", "name": "Reject once", "kind": "reject_once"},
            {"optionId": "reject_always", "name": "Reject always", "kind": "reject_always"},
        ],
    });
    assert_eq!(
        r.render(&request, 1),
        vec![
            delta(json!([{"op": "replace", "path": "/pendingPermission", "value": question}])),
            E::Custom { name: "superpi.permission_request".into(), value: question.clone() },
        ]
    );
    let outcome = json!({"outcome": "selected", "option_id": "allow_once"});
    assert_eq!(
        r.render(&Event::ui_resolved(CONV, Some(TURN), "q1", outcome.clone()), 2),
        vec![
            E::Custom { name: "superpi.ui_resolved".into(), value: json!({"requestId": "q1", "outcome": outcome}) },
            delta(json!([{"op": "replace", "path": "/pendingPermission", "value": null}])),
        ]
    );
}

#[test]
fn a_failed_turn_closes_its_streams_and_ends_with_run_error() {
    let mut r = renderer();
    r.start_run("run-1");
    r.render(&Event::turn_started(CONV, TURN), 0);
    r.render(&Event::text_delta(CONV, Some(TURN), 0, "par"), 0);
    r.render(&Event::text_delta(CONV, Some(TURN), 0, "tial"), 1);
    assert_eq!(
        r.render(&Event::turn_error(CONV, TURN, "provider exploded"), 2),
        vec![
            text_content("msg-t3-1", "tial"),
            E::TextMessageEnd { message_id: "msg-t3-1".into() },
            delta(json!([{"op": "replace", "path": "/status", "value": "idle"}])),
            E::RunError { message: "provider exploded".into(), code: Some("turn_error".into()) },
        ]
    );
    assert!(!r.run_open());
}

#[test]
fn a_cancelled_turn_finishes_with_the_cancelled_outcome() {
    let mut r = renderer();
    r.start_run("run-1");
    r.render(&Event::turn_started(CONV, TURN), 0);
    r.render(
        &Event::toolcall_delta(
            CONV,
            Some(TURN),
            0,
            Some("{".into()),
            Value::Null,
            Some("c1".into()),
            Some("ls".into()),
        ),
        0,
    );
    r.render(&Event::toolcall_delta(CONV, Some(TURN), 0, Some("\"path\"".into()), Value::Null, None, None), 1);
    assert_eq!(
        r.render(&Event::turn_cancelled(CONV, TURN), 5),
        vec![
            E::ToolCallArgs { tool_call_id: "c1".into(), delta: "\"path\"".into() },
            E::ToolCallEnd { tool_call_id: "c1".into() },
            delta(json!([{"op": "replace", "path": "/status", "value": "idle"}])),
            E::RunFinished {
                thread_id: "thread-1".into(),
                run_id: "run-1".into(),
                result: None,
                outcome: Outcome::Cancelled,
            },
        ]
    );
}

#[test]
fn state_changes_between_runs_wait_for_the_next_run() {
    let mut r = Renderer::new("thread-1", &info("idle"), RenderOptions { echo_user: true, ..Default::default() });
    let entries = vec![Entry {
        seq: 1,
        kind: EntryKind::User,
        turn_id: Some(1),
        message: Message::user_text("hi"),
        created_at_ms: 0,
    }];
    assert_eq!(
        attach(&mut r, "attach-1", &history(entries, None, None), false),
        vec![
            E::RunStarted { thread_id: "thread-1".into(), run_id: "attach-1".into() },
            E::StateSnapshot { snapshot: initial_state() },
            E::MessagesSnapshot { messages: vec![AguiMessage::User { id: "u1".into(), content: "hi".into() }] },
            E::RunFinished {
                thread_id: "thread-1".into(),
                run_id: "attach-1".into(),
                result: None,
                outcome: Outcome::success(),
            },
        ]
    );
    assert_eq!(r.render(&Event::mode_changed(CONV, "plan", Some("accept-edits".into())), 0), vec![]);
    assert_eq!(
        r.render(
            &Event::plan_updated(CONV, None, vec![PlanEntry { id: "1".into(), text: "read".into(), completed: false }]),
            0
        ),
        vec![]
    );
    // Another frontend's prompt opens the next run, which carries what changed meanwhile.
    let prompt = seq(Event::message_completed(CONV, Some(4), Role::User, vec![ContentBlock::text("next")], None), 9);
    assert_eq!(
        r.render(&prompt, 1),
        vec![
            E::RunStarted { thread_id: "thread-1".into(), run_id: "turn-4".into() },
            delta(json!([
                {"op": "replace", "path": "/mode", "value": "plan"},
                {"op": "add", "path": "/plan/0", "value": {"id": "1", "text": "read", "completed": false}},
            ])),
            E::TextMessageStart { message_id: "u9".into(), role: "user".into() },
            text_content("u9", "next"),
            E::TextMessageEnd { message_id: "u9".into() },
        ]
    );
    assert_eq!(
        r.render(&Event::turn_started(CONV, 4), 2),
        vec![delta(json!([{"op": "replace", "path": "/status", "value": "running"}]))]
    );
}

#[test]
fn attaching_to_a_running_conversation_keeps_the_run_open_for_its_turn() {
    let mut r = Renderer::new("thread-1", &info("running"), RenderOptions { echo_user: true, ..Default::default() });
    let out = attach(&mut r, "attach-1", &history(vec![], None, None), true);
    assert_eq!(out.len(), 3);
    assert!(r.run_open());
    assert_eq!(
        r.render(&Event::turn_completed(CONV, TURN, None, "end_turn"), 0),
        vec![
            delta(json!([{"op": "replace", "path": "/status", "value": "idle"}])),
            E::RunFinished {
                thread_id: "thread-1".into(),
                run_id: "attach-1".into(),
                result: None,
                outcome: Outcome::success()
            },
        ]
    );
}

#[test]
fn a_clear_asks_for_the_history_whose_snapshot_holds_nothing_before_it() {
    let mut r = renderer();
    r.start_run("run-1");
    assert_eq!(r.render(&Event::context_cleared(CONV), 0), vec![]);
    assert!(r.take_history_request());
    let entry = |seq, kind, message| Entry { seq, kind, turn_id: None, message, created_at_ms: 0 };
    let nothing = Message { role: Role::User, content: vec![], usage: None, stop_reason: None };
    let entries = vec![
        entry(1, EntryKind::User, Message::user_text("old")),
        entry(2, EntryKind::Assistant, Message::user_text("answer")),
        entry(4, EntryKind::Compaction, nothing),
    ];
    assert_eq!(
        messages_snapshot(&mut r, &history(entries, None, None), 1),
        vec![E::MessagesSnapshot { messages: vec![] }]
    );
}

#[test]
fn a_compaction_asks_for_the_history_and_sends_a_messages_snapshot() {
    let mut r = renderer();
    r.start_run("run-1");
    assert_eq!(r.render(&Event::compaction_completed(CONV, None, json!(5), Some("sum".into())), 0), vec![]);
    assert!(r.take_history_request());
    assert!(!r.take_history_request());
    let entry = |seq, kind, message| Entry { seq, kind, turn_id: None, message, created_at_ms: 0 };
    let entries = vec![
        entry(1, EntryKind::User, Message::user_text("old")),
        entry(3, EntryKind::User, Message::user_text("kept")),
        entry(5, EntryKind::Compaction, Message::user_text("sum")),
    ];
    let compaction = seq(Event::compaction_completed(CONV, None, json!(3), Some("sum".into())), 5);
    assert_eq!(
        messages_snapshot(&mut r, &history(entries, Some(compaction), None), 1),
        vec![E::MessagesSnapshot {
            messages: vec![
                AguiMessage::System { id: "c5".into(), content: "sum".into() },
                AguiMessage::User { id: "u3".into(), content: "kept".into() },
            ]
        }]
    );
}

#[test]
fn attaching_shows_the_plan_as_it_stands() {
    let mut r = Renderer::new("thread-1", &info("idle"), RenderOptions { echo_user: true, ..Default::default() });
    let plan = vec![PlanEntry { id: "1".into(), text: "read".into(), completed: true }];
    let out = attach(&mut r, "attach-1", &history(vec![], None, Some(Event::plan_updated(CONV, Some(2), plan))), false);
    let mut state = initial_state();
    state["plan"] = json!([{"id": "1", "text": "read", "completed": true}]);
    assert_eq!(out[1], E::StateSnapshot { snapshot: state });
}

#[test]
fn events_serialize_as_ag_ui_expects() {
    let events = [
        E::RunStarted { thread_id: "t".into(), run_id: "r".into() },
        E::ToolCallStart { tool_call_id: "c".into(), tool_call_name: "ls".into(), parent_message_id: None },
        E::ToolCallResult {
            message_id: "m".into(),
            tool_call_id: "c".into(),
            content: "x".into(),
            role: "tool".into(),
        },
        E::RunFinished { thread_id: "t".into(), run_id: "r".into(), result: None, outcome: Outcome::Cancelled },
        E::RunError { message: "boom".into(), code: None },
        delta(json!([{"op": "replace", "path": "/status", "value": "idle"}])),
    ];
    let wire: Vec<Value> = events.iter().map(|e| serde_json::from_str(&e.to_json()).unwrap()).collect();
    assert_eq!(
        wire,
        vec![
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "ls"}),
            json!({"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": "x", "role": "tool"}),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}}),
            json!({"type": "RUN_ERROR", "message": "boom"}),
            json!({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/status", "value": "idle"}]}),
        ]
    );
    for (event, value) in events.iter().zip(&wire) {
        assert_eq!(value["type"], json!(event.type_name()));
        assert_eq!(&serde_json::from_value::<E>(value.clone()).unwrap(), event);
    }
}

#[test]
fn text_streamed_from_the_middle_asks_for_a_messages_snapshot() {
    let mut r = Renderer::new("thread-1", &info("running"), RenderOptions { echo_user: true, ..Default::default() });
    attach(&mut r, "attach-1", &history(vec![], None, None), true);
    assert_eq!(
        r.render(&Event::text_delta(CONV, Some(TURN), 0, "world"), 0),
        vec![
            E::TextMessageStart { message_id: "msg-t3-1".into(), role: "assistant".into() },
            text_content("msg-t3-1", "world"),
        ]
    );
    assert_eq!(
        r.render(&assistant(vec![ContentBlock::text("hello world")]), 1),
        vec![E::TextMessageEnd { message_id: "msg-t3-1".into() }]
    );
    assert!(r.take_history_request());
    // A message that extends what was streamed needs no snapshot.
    r.render(&Event::text_delta(CONV, Some(TURN), 0, "hel"), 100);
    r.render(&assistant(vec![ContentBlock::text("hello")]), 101);
    assert!(!r.take_history_request());
}

#[test]
fn a_run_stream_and_an_attached_stream_name_a_turns_messages_alike() {
    let turn = [
        Event::turn_started(CONV, TURN),
        Event::text_delta(CONV, Some(TURN), 0, "hi"),
        assistant(vec![ContentBlock::text("hi")]),
        Event::turn_completed(CONV, TURN, None, "end_turn"),
    ];
    let ids = |r: &mut Renderer| -> Vec<String> {
        turn.iter()
            .flat_map(|e| r.render(e, 0))
            .filter_map(|e| match e {
                E::TextMessageStart { message_id, .. } => Some(message_id),
                _ => None,
            })
            .collect()
    };
    let mut run = renderer();
    run.start_run("client-run-id");
    let mut attached =
        Renderer::new("thread-1", &info("idle"), RenderOptions { echo_user: true, ..Default::default() });
    attach(&mut attached, "attach-1", &history(vec![], None, None), false);
    assert_eq!(ids(&mut run), vec!["msg-t3-1".to_string()]);
    assert_eq!(ids(&mut attached), vec!["msg-t3-1".to_string()]);
}

#[test]
fn usage_with_the_context_adds_its_size_and_the_models_window_to_the_state() {
    let mut r = renderer();
    let usage = Usage { input_tokens: 5, output_tokens: 2, ..Default::default() };
    r.render(&Event::turn_started(CONV, TURN), 0);
    let out = r.render(&Event::usage_updated(CONV, Some(TURN), usage, usage).with_context(7, 3000), 10);
    let ops = state_ops(&out);
    assert!(ops.contains(&json!({"op": "add", "path": "/usage/contextTokens", "value": 7})), "{ops:?}");
    assert!(ops.contains(&json!({"op": "add", "path": "/usage/contextWindow", "value": 3000})), "{ops:?}");
}

/// The JSON Patch operations of the output's state deltas, in order.
fn state_ops(out: &[E]) -> Vec<Value> {
    out.iter()
        .filter_map(|e| match e {
            E::StateDelta { delta } => serde_json::to_value(delta).ok(),
            _ => None,
        })
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn usage_with_a_cost_puts_the_dollars_in_the_state() {
    let mut r = renderer();
    let usage = Usage { input_tokens: 5, output_tokens: 2, ..Default::default() };
    r.render(&Event::turn_started(CONV, TURN), 0);
    let cost = superpi_proto::Cost { call: Some(0.5), turn: Some(0.75), total: Some(2.0) };
    let out = r.render(&Event::usage_updated(CONV, Some(TURN), usage, usage).with_cost(cost), 10);
    let ops = state_ops(&out);
    for (key, usd) in [("costUsd", 0.5), ("turnCostUsd", 0.75), ("totalCostUsd", 2.0)] {
        assert!(ops.contains(&json!({"op": "add", "path": format!("/usage/{key}"), "value": usd})), "{key}: {ops:?}");
    }
}

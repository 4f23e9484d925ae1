//! The AG-UI 1.0 mappings: whole-object assertions of interrupts, pending client tools,
//! subagents and tool-output activities.
use serde_json::{Value, json};
use superpi_proto::Event;
use superpi_proto::event::PermissionRequestFields;
use superpi_proto::method::ConversationInfo;

use crate::render::{CLIENT_TOOL, RenderOptions, Renderer, TOOL_OUTPUT};
use crate::wire::{AguiEvent as E, Interrupt, Outcome};

const CONV: i64 = 7;
const TURN: i64 = 3;

fn info() -> ConversationInfo {
    serde_json::from_value(json!({
        "conversation_id": CONV, "harness": "superpi-code", "model": "mock", "mode": "accept-edits",
        "max_mode": "accept-edits", "workspace": "/w", "created_at_ms": 0, "status": "idle", "head_seq": 0,
        "created": true,
    }))
    .unwrap()
}

/// A run stream of a client of AG-UI 1.0, its turn started and a call announced.
fn run_1_0() -> Renderer {
    let opts = RenderOptions { interrupts: true, client_tools: true, ..Default::default() };
    let mut r = Renderer::new("thread-1", &info(), opts);
    r.start_run("run-1");
    r.render(&Event::turn_started(CONV, TURN), 0);
    r
}

fn at(mut event: Event, seq: u64) -> Event {
    event.seq = seq;
    event
}

fn finished(outcome: Outcome) -> E {
    E::RunFinished { thread_id: "thread-1".into(), run_id: "run-1".into(), result: None, outcome }
}

fn patch(ops: Value) -> json_patch::Patch {
    serde_json::from_value(ops).unwrap()
}

#[test]
fn a_question_ends_a_1_0_run_as_an_interrupt_with_its_options_schema() {
    let mut r = run_1_0();
    r.render(&Event::tool_started(CONV, Some(TURN), "c9", "bash", json!({"command": "make"}), vec![]), 1);
    let fields = PermissionRequestFields {
        request_id: "perm-1".into(),
        tool_call_id: "c9".into(),
        tool_name: "bash".into(),
        arguments: json!({"command": "make"}),
        reason: "not in the allow list".into(),
        risk: None,
    };
    let out = r.render(&at(Event::permission_request(CONV, Some(TURN), fields), 12), 2);
    let [E::StateDelta { delta }, last] = out.as_slice() else { panic!("{out:?}") };
    let question = serde_json::to_value(delta).unwrap()[0]["value"].clone();
    assert_eq!(question["requestId"], "perm-1");
    let options = ["allow_once", "allow_always", "reject_once", "reject_always"];
    assert_eq!(
        *last,
        finished(Outcome::Interrupt {
            interrupts: vec![Interrupt {
                id: "perm-1@3:12".into(),
                reason: "permission".into(),
                message: Some("not in the allow list".into()),
                tool_call_id: Some("c9".into()),
                response_schema: Some(json!({
                    "type": "object",
                    "properties": {"optionId": {"type": "string", "enum": options}},
                    "required": ["optionId"],
                })),
                metadata: Some(question),
            }],
        })
    );
    assert!(!r.run_open());
    // The interrupted turn's later events are not this run's.
    assert_eq!(r.render(&at(Event::turn_completed(CONV, TURN, None, "end_turn"), 13), 3), vec![]);
}

#[test]
fn a_client_tools_call_ends_the_run_naming_it_pending() {
    let mut r = run_1_0();
    let request = json!({"kind": CLIENT_TOOL, "tool_call_id": "c5", "name": "pick_colour", "arguments": {}});
    let request = request.as_object().cloned().unwrap();
    let mut out = r.render(&Event::tool_started(CONV, Some(TURN), "c5", "pick_colour", json!({}), vec![]), 1);
    out.extend(r.render(&Event::ui_request(CONV, Some(TURN), "ui-1", request.clone()), 2));
    assert_eq!(
        out,
        vec![
            E::ToolCallStart {
                tool_call_id: "c5".into(),
                tool_call_name: "pick_colour".into(),
                parent_message_id: Some("msg-t3-1".into()),
            },
            E::ToolCallArgs { tool_call_id: "c5".into(), delta: "{}".into() },
            E::ToolCallEnd { tool_call_id: "c5".into() },
            finished(Outcome::Success { pending_tool_call_ids: vec!["c5".into()] }),
        ]
    );
    // An attached watcher does not run the client's tools: it is told, and its run goes on.
    let mut watcher = Renderer::new("thread-1", &info(), RenderOptions { echo_user: true, ..Default::default() });
    watcher.start_run("attach");
    let out = watcher.render(&Event::ui_request(CONV, Some(TURN), "ui-1", request), 2);
    assert!(matches!(out.as_slice(), [E::Custom { name, .. }] if name == "superpi.ui_request"), "{out:?}");
    assert!(watcher.run_open());
}

#[test]
fn subagents_start_and_finish_and_one_open_at_the_end_errs() {
    let mut r = run_1_0();
    let mut out = r.render(&Event::subagent_started(CONV, Some(TURN), 21, "superpi-planner", "look around"), 1);
    out.extend(r.render(&Event::subagent_finished(CONV, Some(TURN), 21, "completed", Some("found it".into())), 2));
    out.extend(r.render(&Event::subagent_started(CONV, Some(TURN), 22, "superpi-code", ""), 3));
    out.extend(r.render(&Event::subagent_finished(CONV, Some(TURN), 22, "error", Some("broke".into())), 4));
    out.extend(r.render(&Event::subagent_started(CONV, Some(TURN), 23, "superpi-planner", "late"), 5));
    // A subagent this stream never saw start is not ended in it.
    out.extend(r.render(&Event::subagent_finished(CONV, Some(TURN), 99, "completed", None), 6));
    out.extend(r.render(&Event::turn_cancelled(CONV, TURN), 7));
    let run_id = |id: i64| format!("subagent-{id}");
    assert_eq!(
        out.into_iter().filter(|e| !matches!(e, E::StateDelta { .. })).collect::<Vec<_>>(),
        vec![
            E::SubagentStarted {
                subagent_run_id: run_id(21),
                name: "superpi-planner".into(),
                description: Some("look around".into()),
            },
            E::SubagentFinished { subagent_run_id: run_id(21), result: Some(json!("found it")) },
            E::SubagentStarted { subagent_run_id: run_id(22), name: "superpi-code".into(), description: None },
            E::SubagentError { subagent_run_id: run_id(22), message: "broke".into(), code: Some("error".into()) },
            E::SubagentStarted {
                subagent_run_id: run_id(23),
                name: "superpi-planner".into(),
                description: Some("late".into()),
            },
            E::SubagentError {
                subagent_run_id: run_id(23),
                message: "the run ended before the subagent did".into(),
                code: Some("run_ended".into()),
            },
            finished(Outcome::Cancelled),
        ]
    );
}

#[test]
fn a_calls_output_is_an_activity_patched_as_it_grows_and_when_it_ends() {
    let mut r = run_1_0();
    r.render(&Event::tool_started(CONV, Some(TURN), "c1", "bash", json!({"command": "make"}), vec![]), 1);
    let mut out = r.render(&Event::tool_output(CONV, Some(TURN), "c1", "bash", "compiling\n"), 2);
    out.extend(r.render(&Event::tool_output(CONV, Some(TURN), "c1", "bash", "done\n"), 3));
    out.extend(r.render(&Event::tool_completed(CONV, Some(TURN), "c1", "bash", false, json!("done")), 4));
    let activity = |patch: json_patch::Patch| E::ActivityDelta {
        message_id: "activity-c1".into(),
        activity_type: TOOL_OUTPUT.into(),
        patch,
    };
    assert_eq!(
        out,
        vec![
            E::ActivitySnapshot {
                message_id: "activity-c1".into(),
                activity_type: TOOL_OUTPUT.into(),
                content: json!({"toolCallId": "c1", "toolName": "bash", "status": "running", "output": ["compiling\n"]}),
            },
            activity(patch(json!([{"op": "add", "path": "/output/-", "value": "done\n"}]))),
            activity(patch(json!([{"op": "replace", "path": "/status", "value": "completed"}]))),
            E::ToolCallResult {
                message_id: "tool-c1".into(),
                tool_call_id: "c1".into(),
                content: "done".into(),
                role: "tool".into(),
            },
        ]
    );
}

#[test]
fn a_continuing_run_names_its_messages_after_the_question() {
    let opts = RenderOptions { interrupts: true, client_tools: true, ..Default::default() };
    let mut r = Renderer::new("thread-1", &info(), opts);
    r.start_run("run-2");
    r.continue_turn(TURN, 40);
    let out = r.render(&Event::text_delta(CONV, Some(TURN), 0, "ok"), 0);
    assert_eq!(out[0], E::TextMessageStart { message_id: "msg-t3-41".into(), role: "assistant".into() });
}

#[test]
fn the_new_events_serialize_as_ag_ui_1_0_names_them() {
    let cases = [
        (
            finished(Outcome::Success { pending_tool_call_ids: vec!["c5".into()] }),
            json!({"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "run-1",
                   "outcome": {"type": "success", "pendingToolCallIds": ["c5"]}}),
        ),
        (
            finished(Outcome::success()),
            json!({"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "run-1", "outcome": {"type": "success"}}),
        ),
        (
            finished(Outcome::Interrupt {
                interrupts: vec![Interrupt {
                    id: "q@1:2".into(),
                    reason: "permission".into(),
                    message: None,
                    tool_call_id: Some("c".into()),
                    response_schema: Some(json!({"type": "object"})),
                    metadata: None,
                }],
            }),
            json!({"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "run-1", "outcome": {"type": "interrupt",
                   "interrupts": [{"id": "q@1:2", "reason": "permission", "toolCallId": "c",
                                   "responseSchema": {"type": "object"}}]}}),
        ),
        (
            E::SubagentStarted { subagent_run_id: "s".into(), name: "n".into(), description: None },
            json!({"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "n"}),
        ),
        (
            E::ActivityDelta { message_id: "a".into(), activity_type: "t".into(), patch: patch(json!([])) },
            json!({"type": "ACTIVITY_DELTA", "messageId": "a", "activityType": "t", "patch": []}),
        ),
    ];
    for (event, wire) in cases {
        assert_eq!(serde_json::to_value(&event).unwrap(), wire);
        assert_eq!(serde_json::to_value(&event).unwrap()["type"], event.type_name());
    }
}

//! Properties of the renderer over generated turns: whatever the kernel sends, in whatever
//! timing, the output keeps the official client's order rules, carries every character of the
//! answer exactly once, and its state events rebuild the renderer's state.

use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::{Value, json};
use superpi_proto::event::{PermissionRequestFields, PlanEntry};
use superpi_proto::method::ConversationInfo;
use superpi_proto::{ContentBlock, Event, Role, Usage};

use super::*;
use crate::wire::AguiEvent as E;

const CONV: i64 = 1;

#[derive(Debug, Clone)]
enum Block {
    Thinking(Vec<String>),
    Text(Vec<String>),
    Tool { name: String, args: Vec<String>, ask: bool },
}

#[derive(Debug, Clone)]
struct Call {
    blocks: Vec<Block>,
    /// Deltas of the last streamed block that never arrive (the completed message has them).
    lost_tail: usize,
}

#[derive(Debug, Clone, Copy)]
enum End {
    Completed,
    Failed,
    Cancelled,
}

#[derive(Debug, Clone)]
struct Turn {
    calls: Vec<Call>,
    end: End,
    /// Cut the turn after this many kernel events (a cancel or failure mid-stream).
    cut: Option<usize>,
    gaps: Vec<u64>,
    mode_change: bool,
}

fn chunks() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z ]{1,6}", 1..6)
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        chunks().prop_map(Block::Thinking),
        chunks().prop_map(Block::Text),
        (prop::sample::select(vec!["ls", "bash", "read"]), chunks(), any::<bool>())
            .prop_map(|(name, args, ask)| Block::Tool { name: name.to_string(), args, ask }),
    ]
}

fn turn() -> impl Strategy<Value = Turn> {
    let call =
        (prop::collection::vec(block(), 1..4), 0usize..3).prop_map(|(blocks, lost_tail)| Call { blocks, lost_tail });
    (
        prop::collection::vec(call, 1..3),
        prop_oneof![Just(End::Completed), Just(End::Failed), Just(End::Cancelled)],
        prop::option::of(0usize..40),
        prop::collection::vec(0u64..40, 64),
        any::<bool>(),
    )
        .prop_map(|(calls, end, cut, gaps, mode_change)| Turn { calls, end, cut, gaps, mode_change })
}

/// The kernel events of a turn, and the text a client should end up reading.
fn script(turn: &Turn, turn_id: i64) -> Vec<Event> {
    let t = Some(turn_id);
    let mut events = vec![Event::turn_started(CONV, turn_id)];
    let mut tool_no = 0;
    for call in &turn.calls {
        let mut content = Vec::new();
        let mut deltas = Vec::new();
        let mut tools = Vec::new();
        for (index, block) in call.blocks.iter().enumerate() {
            let index = index as u32;
            match block {
                Block::Thinking(parts) => {
                    deltas.extend(parts.iter().map(|p| Event::thinking_delta(CONV, t, index, p.clone())));
                    content.push(ContentBlock::Thinking { thinking: parts.concat(), signature: None, redacted: false });
                }
                Block::Text(parts) => {
                    deltas.extend(parts.iter().map(|p| Event::text_delta(CONV, t, index, p.clone())));
                    content.push(ContentBlock::text(parts.concat()));
                }
                Block::Tool { name, args, ask } => {
                    tool_no += 1;
                    let id = format!("call_{turn_id}_{tool_no}");
                    for (k, part) in args.iter().enumerate() {
                        let first = k == 0;
                        deltas.push(Event::toolcall_delta(
                            CONV,
                            t,
                            index,
                            Some(part.clone()),
                            Value::Null,
                            first.then(|| id.clone()),
                            first.then(|| name.clone()),
                        ));
                    }
                    let arguments = json!({"raw": args.concat()});
                    content.push(ContentBlock::ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: arguments.clone(),
                    });
                    tools.push((id, name.clone(), arguments, *ask));
                }
            }
        }
        let keep = deltas.len().saturating_sub(call.lost_tail);
        events.extend(deltas.into_iter().take(keep));
        events.push(Event::message_completed(CONV, t, Role::Assistant, content, None));
        events.push(Event::usage_updated(
            CONV,
            t,
            Usage { input_tokens: 3, output_tokens: 2, ..Default::default() },
            Usage { input_tokens: 3 * tool_no as u64, output_tokens: 2, ..Default::default() },
        ));
        for (id, name, arguments, ask) in tools {
            events.push(Event::tool_started(CONV, t, &id, &name, arguments.clone(), vec![]));
            // Some calls start a subagent (a cut may leave it open at the end of the run).
            let child = (name == "read").then(|| 100 + events.len() as i64);
            if let Some(child) = child {
                events.push(Event::subagent_started(CONV, t, child, "superpi-planner", "look"));
            }
            if ask {
                let request_id = format!("q-{id}");
                events.push(Event::permission_request(
                    CONV,
                    t,
                    PermissionRequestFields {
                        request_id: request_id.clone(),
                        tool_call_id: id.clone(),
                        tool_name: name.clone(),
                        arguments,
                        reason: "asks".into(),
                        risk: None,
                    },
                ));
                events.push(Event::ui_resolved(CONV, t, request_id, json!({"outcome": "selected"})));
            }
            events.push(Event::tool_output(CONV, t, &id, &name, "partial"));
            events.push(Event::tool_output(CONV, t, &id, &name, "more"));
            if let Some(child) = child {
                events.push(Event::subagent_finished(CONV, t, child, "completed", Some("found".into())));
            }
            events.push(Event::tool_completed(CONV, t, &id, &name, false, json!("done")));
        }
    }
    if turn.mode_change {
        let at = events.len() / 2;
        events.insert(at, Event::mode_changed(CONV, "plan", Some("auto".into())));
        events.insert(
            at,
            Event::plan_updated(CONV, t, vec![PlanEntry { id: "1".into(), text: "x".into(), completed: false }]),
        );
    }
    if let Some(cut) = turn.cut {
        events.truncate(cut.max(1));
    }
    events.push(match (turn.end, turn.cut) {
        (End::Completed, None) => Event::turn_completed(CONV, turn_id, Some("r".into()), "end_turn"),
        (End::Failed, _) => Event::turn_error(CONV, turn_id, "boom"),
        _ => Event::turn_cancelled(CONV, turn_id),
    });
    events
}

/// What the kernel events say the client should read as assistant text: every completed
/// message's text, and the streamed deltas of a message that never completed.
fn expected_text(events: &[Event]) -> String {
    let mut out = String::new();
    let mut streamed = String::new();
    for event in events {
        match &event.body {
            EventBody::TextDelta { delta, .. } => streamed.push_str(delta),
            EventBody::MessageCompleted { content, .. } => {
                let text = blocks_text(content);
                // A completed message replaces what was streamed when it extends it.
                if text.starts_with(&streamed) {
                    out.push_str(&text);
                } else {
                    out.push_str(&streamed);
                }
                streamed.clear();
            }
            _ => {}
        }
    }
    out.push_str(&streamed);
    out
}

/// The order rules of `@ag-ui/client`'s verifier.
fn check_order(events: &[E]) {
    let mut run_open = false;
    let mut after_error = false;
    let (mut texts, mut tools, mut reasoning, mut spans) =
        (HashSet::new(), HashSet::new(), HashSet::new(), HashSet::new());
    let (mut subagents, mut ended, mut activities) = (HashSet::new(), HashSet::new(), HashSet::new());
    for (i, e) in events.iter().enumerate() {
        if i == 0 {
            assert!(matches!(e, E::RunStarted { .. }), "first event {e:?}");
        }
        if !run_open {
            assert!(matches!(e, E::RunStarted { .. }), "{e:?} outside a run at {i}: {events:#?}");
        }
        if after_error {
            assert!(matches!(e, E::RunStarted { .. }));
        }
        match e {
            E::RunStarted { .. } => {
                assert!(!run_open);
                run_open = true;
                after_error = false;
            }
            E::RunFinished { .. } => {
                assert!(
                    texts.is_empty() && tools.is_empty() && reasoning.is_empty() && spans.is_empty(),
                    "{events:#?}"
                );
                assert!(subagents.is_empty(), "a subagent still open at RUN_FINISHED: {events:#?}");
                run_open = false;
                ended.clear();
            }
            E::SubagentStarted { subagent_run_id, .. } => {
                assert!(!ended.contains(subagent_run_id), "a subagent id used again in a run");
                assert!(subagents.insert(subagent_run_id.clone()), "{events:#?}");
            }
            E::SubagentFinished { subagent_run_id, .. } | E::SubagentError { subagent_run_id, .. } => {
                assert!(subagents.remove(subagent_run_id), "no active subagent {subagent_run_id}: {events:#?}");
                ended.insert(subagent_run_id.clone());
            }
            E::ActivitySnapshot { message_id, .. } => {
                activities.insert(message_id.clone());
            }
            E::ActivityDelta { message_id, .. } => assert!(activities.contains(message_id), "{events:#?}"),
            E::RunError { .. } => {
                run_open = false;
                after_error = true;
                subagents.clear();
                ended.clear();
                texts.clear();
                tools.clear();
                reasoning.clear();
                spans.clear();
            }
            E::TextMessageStart { message_id, .. } => assert!(texts.insert(message_id.clone())),
            E::TextMessageContent { message_id, delta } => {
                assert!(texts.contains(message_id), "{events:#?}");
                assert!(!delta.is_empty());
            }
            E::TextMessageEnd { message_id } => assert!(texts.remove(message_id)),
            E::ToolCallStart { tool_call_id, .. } => assert!(tools.insert(tool_call_id.clone()), "{events:#?}"),
            E::ToolCallArgs { tool_call_id, delta } => {
                assert!(tools.contains(tool_call_id), "{events:#?}");
                assert!(!delta.is_empty());
            }
            E::ToolCallEnd { tool_call_id } => assert!(tools.remove(tool_call_id), "{events:#?}"),
            E::ReasoningStart { message_id } => assert!(spans.insert(message_id.clone())),
            E::ReasoningMessageStart { message_id, .. } => assert!(reasoning.insert(message_id.clone())),
            E::ReasoningMessageContent { message_id, delta } => {
                assert!(reasoning.contains(message_id));
                assert!(!delta.is_empty());
            }
            E::ReasoningMessageEnd { message_id } => assert!(reasoning.remove(message_id)),
            E::ReasoningEnd { message_id } => assert!(spans.remove(message_id)),
            _ => {}
        }
    }
    assert!(!run_open, "the run was left open: {events:#?}");
}

fn info() -> ConversationInfo {
    ConversationInfo {
        conversation_id: CONV,
        harness: "superpi-code".into(),
        model: "mock".into(),
        mode: "auto".into(),
        max_mode: "auto".into(),
        effort: None,
        workspace: None,
        title: None,
        parent_id: None,
        created_at_ms: 0,
        status: "idle".into(),
        head_seq: 0,
        created: true,
        rules_files: Vec::new(),
        cost_usd: None,
    }
}

/// Feeds events as the transport does: held content goes out at its deadline when the next
/// event comes later than that.
fn drive(r: &mut Renderer, events: &[Event], gaps: &[u64], clock: &mut u64) -> Vec<E> {
    let mut out = Vec::new();
    for (i, event) in events.iter().enumerate() {
        *clock += gaps[i % gaps.len()];
        if let Some(due) = r.deadline().filter(|due| *due <= *clock) {
            out.extend(r.poll(due));
        }
        out.extend(r.render(event, *clock));
    }
    out.extend(r.flush(*clock));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_turn_keeps_order_text_and_state(
        turns in prop::collection::vec(turn(), 1..3),
        echo in any::<bool>(),
        interrupts in any::<bool>(),
    ) {
        let opts = RenderOptions { echo_user: echo, interrupts, client_tools: true, ..Default::default() };
        let mut r = Renderer::new("t", &info(), opts);
        let mut out = Vec::new();
        let mut clock = 0;
        let mut want = String::new();
        let mut deltas = 0;
        for (k, turn) in turns.iter().enumerate() {
            let events = script(turn, k as i64 + 1);
            want.push_str(&expected_text(&events));
            deltas += events.iter().filter(|e| e.body.is_transient()).count();
            if k == 0 {
                out.extend(r.start_run("run-1"));
            }
            out.extend(drive(&mut r, &events, &turn.gaps, &mut clock));
        }
        check_order(&out);
        let got: String = out
            .iter()
            .filter_map(|e| match e {
                E::TextMessageContent { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        prop_assert_eq!(got, want);
        let content_events = out
            .iter()
            .filter(|e| matches!(e, E::TextMessageContent { .. } | E::ReasoningMessageContent { .. } | E::ToolCallArgs { .. }))
            .count();
        // Merging never adds events; completed messages may add one per stream at most.
        prop_assert!(content_events <= deltas + 3 * turns.iter().map(|t| t.calls.len() * 3).sum::<usize>());
        // Snapshot then patches rebuild the state the renderer holds.
        let mut state = Value::Null;
        for e in &out {
            match e {
                E::StateSnapshot { snapshot } => state = snapshot.clone(),
                E::StateDelta { delta } => json_patch::patch(&mut state, delta).unwrap(),
                _ => {}
            }
        }
        // A run paused on an interrupt ends its stream (the resuming run opens its own with a
        // snapshot): what the renderer saw after it is not this stream's.
        let paused = out.iter().any(|e| matches!(e, E::RunFinished { outcome: Outcome::Interrupt { .. }, .. }));
        if !paused {
            prop_assert_eq!(&state, r.state());
            prop_assert_eq!(&state["status"], &json!("idle"));
        }
        // Every tool call that started was closed before its result.
        let mut closed = HashSet::new();
        for e in &out {
            match e {
                E::ToolCallEnd { tool_call_id } => { closed.insert(tool_call_id.clone()); }
                E::ToolCallResult { tool_call_id, .. } => prop_assert!(closed.contains(tool_call_id)),
                _ => {}
            }
        }
    }
}

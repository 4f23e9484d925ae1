use super::*;
use agent_client_protocol::v1::schema::SelectedPermissionOutcome;

fn selected(id: &'static str) -> Option<RequestPermissionResponse> {
    Some(RequestPermissionResponse::new(RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))))
}

fn session() -> Arc<Session> {
    let info = ConversationInfo {
        conversation_id: 5,
        harness: "superpi-code".into(),
        model: "mock".into(),
        mode: "accept-edits".into(),
        max_mode: "accept-edits".into(),
        effort: None,
        workspace: Some("/ws".into()),
        title: None,
        parent_id: None,
        created_at_ms: 0,
        status: "idle".into(),
        head_seq: 12,
        created: true,
        rules_files: Vec::new(),
        cost_usd: None,
    };
    Session::new(&info, RenderOptions::default())
}

fn alive(s: &Session) {
    lock(&s.state).pump_alive = true;
}

#[test]
fn a_turn_that_ended_before_anyone_waited_answers_at_once() {
    let s = session();
    assert_eq!(s.id, crate::request::session_id(5));
    alive(&s);
    s.turn_ended(Some(8), StopReason::MaxTokens);
    assert_eq!(s.wait_turn(8).try_recv().unwrap(), StopReason::MaxTokens);
    // Claimed once: a second wait on it waits.
    assert!(s.wait_turn(8).try_recv().is_err());
}

#[test]
fn waiting_turns_resolve_when_they_end_and_fail_when_the_watch_dies() {
    let s = session();
    alive(&s);
    let mut first = s.wait_turn(1);
    let mut second = s.wait_turn(2);
    s.turn_ended(Some(1), StopReason::EndTurn);
    assert_eq!(first.try_recv().unwrap(), StopReason::EndTurn);
    assert!(second.try_recv().is_err());
    lock(&s.state).pump_alive = false;
    for tx in lock(&s.state).waiting.drain().flat_map(|(_, waiters)| waiters) {
        let _ = tx.send(StopReason::Refusal);
    }
    assert_eq!(second.try_recv().unwrap(), StopReason::Refusal);
    // With no live watch nobody would say when a turn ends: refusal at once.
    assert_eq!(s.wait_turn(3).try_recv().unwrap(), StopReason::Refusal);
}

#[test]
fn a_cancelled_prompt_ends_cancelled_and_frees_the_session() {
    let s = session();
    alive(&s);
    let (guard, steers) = s.begin_prompt();
    assert!(!steers);
    let (steering, steers) = s.begin_prompt();
    assert!(steers, "a second prompt steers the first one's turn");
    let mut rx = s.wait_turn(4);
    let mut steering_rx = s.wait_turn(4);
    let (running, questions) = s.take_questions_for_cancel();
    assert!(running && questions.is_empty());
    assert!(s.cancel_requested());
    s.turn_ended(Some(4), StopReason::EndTurn);
    assert_eq!(rx.try_recv().unwrap(), StopReason::Cancelled);
    assert_eq!(steering_rx.try_recv().unwrap(), StopReason::Cancelled);
    drop(guard);
    assert!(s.prompt_running(), "the steering prompt still runs");
    drop(steering);
    assert!(!s.prompt_running() && !s.cancel_requested());
    assert!(!s.begin_prompt().1);
    // A cancel with no prompt running cancels nothing.
    let s = session();
    assert!(!s.take_questions_for_cancel().0);
}

#[test]
fn a_prompt_that_joins_a_turn_ends_the_prompt_before_it_whenever_the_join_is_seen() {
    let s = session();
    alive(&s);
    let mut first = s.wait_turn(7);
    let mut second = s.wait_turn(7);
    assert!(first.try_recv().is_err());
    s.prompt_joined(7);
    assert_eq!(first.try_recv().unwrap(), StopReason::EndTurn);
    assert!(second.try_recv().is_err(), "the joining prompt waits for the turn's end");
    // A join seen before the joining prompt waits (its submit answered later) counts then.
    s.prompt_joined(7);
    let mut third = s.wait_turn(7);
    assert_eq!(second.try_recv().unwrap(), StopReason::EndTurn);
    s.turn_ended(Some(7), StopReason::MaxTokens);
    assert_eq!(third.try_recv().unwrap(), StopReason::MaxTokens);
    // A join with only one prompt waiting (another frontend steered) ends nothing.
    let mut alone = s.wait_turn(9);
    s.prompt_joined(9);
    assert!(alone.try_recv().is_err());
}

#[test]
fn a_steering_through_the_extension_ends_no_prompt_and_a_later_join_still_counts() {
    let s = session();
    alive(&s);
    let mut running = s.wait_turn(3);
    // `_session/steering` joins: seen before the kernel's answer, it ends nothing and leaves
    // nothing counted for a later prompt.
    let steering = s.begin_steering();
    s.prompt_joined(3);
    steering.joins();
    let mut second = s.wait_turn(3);
    assert!(running.try_recv().is_err(), "the extension's join ended the running prompt");
    // A second session/prompt that steers still ends the one before it when it joins.
    s.prompt_joined(3);
    assert_eq!(running.try_recv().unwrap(), StopReason::EndTurn);
    // One the kernel queued as a turn of its own (not joined) is no longer counted.
    drop(s.begin_steering());
    assert_eq!(lock(&s.state).steerings, 0);
    s.turn_ended(Some(3), StopReason::EndTurn);
    assert_eq!(second.try_recv().unwrap(), StopReason::EndTurn);
}

#[test]
fn adjacent_text_chunks_merge_and_nothing_else_moves() {
    let msg = |s: &str| {
        Out::Update(SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(s)))))
    };
    let thought = |s: &str| {
        Out::Update(SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(s)))))
    };
    let end = Out::TurnEnded { turn_id: Some(1), stop_reason: StopReason::EndTurn };
    let input = vec![thought("a"), thought("b"), msg("c"), msg("d"), msg("e"), end.clone(), msg("f")];
    assert_eq!(coalesce(input), vec![thought("ab"), msg("cde"), end, msg("f")]);
    assert_eq!(coalesce(vec![]), vec![]);
}

#[test]
fn a_read_question_settled_in_the_same_batch_is_dropped() {
    let read =
        |id: &str| Out::ReadFile(ReadRequest { request_id: id.into(), path: "/ws/a".into(), tool_call_id: None });
    let closed = |id: &str| Out::QuestionClosed { request_id: id.into() };
    let input = vec![read("u1"), read("u2"), closed("u1")];
    assert_eq!(coalesce(input), vec![read("u2"), closed("u1")]);
}

#[test]
fn answers_fail_closed_unless_one_of_the_four_is_chosen() {
    for id in KNOWN_OPTIONS {
        assert_eq!(answer_option(selected(id)), *id);
    }
    assert_eq!(answer_option(selected("allow_everything")), "reject_once");
    assert_eq!(answer_option(Some(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled))), "reject_once");
    assert_eq!(answer_option(None), "reject_once");
}

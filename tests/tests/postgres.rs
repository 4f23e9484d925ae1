//! The store on PostgreSQL, end to end: `superpi kernel` with `SUPERPI_DATABASE_URL` keeps its
//! conversations in the database, so a kernel on another machine (here another data directory)
//! continues them; one killed during a tool call leaves a database the next kernel recovers
//! (the call gets its result, the turn its end, the seqs no gap). Skipped, saying so, without
//! PostgreSQL binaries unless CI is set.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use superpi_client::KernelClient;
use superpi_proto::message::codes;
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{ContentBlock, EventBody};
use superpi_tests::{KillOnDrop, TestEnv, next_event, open_and_watch, postgres_server, turn_events, wait};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_killed_during_a_tool_call_is_recovered_and_continued_by_a_kernel_on_another_machine() {
    let Some(server) = postgres_server::shared() else { return };
    let url = server.new_database();
    // A short lease: kernel B takes over soon after A's last renewal.
    let vars = [("SUPERPI_DATABASE_URL", url.as_str()), ("SUPERPI_LEASE_MS", "1500")];

    let machine_a = TestEnv::new();
    let (_kernel_a, client) = machine_a.start_kernel(&vars).await;
    let (conv, mut sub) = open_and_watch(&client, &machine_a.workspace, Some("auto"), false).await;
    let first = client.submit_text(conv, "hello").await.unwrap();
    turn_events(&mut sub, first.turn_id).await;
    let turn = client.submit_text(conv, "@tool bash {\"command\": \"sleep 30\"}").await.unwrap();
    let started = next_event(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    let EventBody::ToolStarted { tool_call_id, .. } = started.body else { unreachable!() };
    machine_a.kill_kernel();
    drop((sub, client));
    // Nothing of the conversation is in machine A's data directory.
    assert!(!machine_a.database_path().exists());

    let machine_b = TestEnv::new();
    let (_kernel_b, client) = machine_b.start_kernel(&vars).await;
    // Watched from the start while A's lease runs out: B takes the conversation over and ends
    // the killed turn.
    let mut replay = client.watch(watch_from(conv, Some(0))).await.unwrap();
    let end = next_event(&mut replay, |e| e.body.is_turn_end() && e.turn_id == Some(turn.turn_id)).await;
    assert!(matches!(&end.body, EventBody::TurnError { error } if error.contains("interrupted")));
    let history = client.history(conv).await.unwrap().entries;
    let kinds: Vec<&str> = history.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["user", "assistant", "user", "assistant", "tool_result"]);
    assert!(matches!(
        history.last().unwrap().message.content.as_slice(),
        [ContentBlock::ToolResult { tool_call_id: id, is_error: true, output, .. }]
            if *id == tool_call_id && output.contains("interrupted")
    ));

    // B runs it now: a watch of it is B's live feed, deltas and all.
    assert!(client.status().await.unwrap().owned_conversations.contains(&conv));
    let mut live_sub = client.watch(watch_from(conv, None)).await.unwrap();
    let next = client.submit_text(conv, "still here").await.unwrap();
    let events = turn_events(&mut live_sub, next.turn_id).await;
    assert!(
        matches!(&events.last().unwrap().body, EventBody::TurnCompleted { result: Some(r), .. } if r == "still here")
    );

    // What kernel B published live follows its head with no gap (deltas included) ...
    let live: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(live.windows(2).all(|w| w[1] == w[0] + 1), "kernel B's seqs have a gap: {live:?}");
    // ... and the stored events of both kernels replay once each, in order.
    let mut check = client.watch(watch_from(conv, Some(0))).await.unwrap();
    let last = *live.last().unwrap();
    let mut stored = vec![next_event(&mut check, |_| true).await.seq];
    while stored.last() != Some(&last) {
        stored.push(next_event(&mut check, |_| true).await.seq);
    }
    assert_eq!(stored[0], 1);
    assert!(stored.windows(2).all(|w| w[1] > w[0]), "replayed seqs out of order: {stored:?}");
}

/// Two kernels on one database (on two machines: two data directories), with a short lease.
pub(crate) async fn two_kernels(url: &str) -> (TestEnv, KillOnDrop, KernelClient, TestEnv, KillOnDrop, KernelClient) {
    let [(machine_a, kernel_a, a), (machine_b, kernel_b, b)] = TestEnv::two_on_one_database(url).await;
    (machine_a, kernel_a, a, machine_b, kernel_b, b)
}

pub(crate) fn watch_from(conversation_id: i64, from_seq: Option<u64>) -> WatchParams {
    WatchParams::live(conversation_id).catch_up(from_seq)
}

pub(crate) fn completed_with(events: &[superpi_proto::Event], text: &str) -> bool {
    matches!(&events.last().map(|e| &e.body), Some(EventBody::TurnCompleted { result: Some(r), .. }) if r == text)
}

/// Two live kernels on one database: a conversation opened through A is listed, watched live
/// and continued through B while A runs it (B queues the prompt in the database, A runs it);
/// A killed during a turn submitted through B: B takes the conversation over once A's lease
/// runs out, ends that turn as interrupted, runs the prompt queued meanwhile, and every turn
/// ran once, every stored seq once and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_kernels_on_one_database_continue_a_conversation_while_both_live_and_after_one_is_killed() {
    let Some(server) = postgres_server::shared() else { return };
    let (machine_a, _kernel_a, a, _machine_b, _kernel_b, b) = two_kernels(&server.new_database()).await;

    let (conv, mut on_a) = open_and_watch(&a, &machine_a.workspace, Some("auto"), false).await;
    let first = a.submit_text(conv, "one").await.unwrap();
    assert!(completed_with(&turn_events(&mut on_a, first.turn_id).await, "one"));

    // B lists it and watches it from the start, through the database.
    assert!(b.list().await.unwrap().iter().any(|c| c.conversation_id == conv));
    let mut on_b = b.watch(watch_from(conv, Some(0))).await.unwrap();
    assert!(completed_with(&turn_events(&mut on_b, first.turn_id).await, "one"));
    assert!(a.status().await.unwrap().owned_conversations.contains(&conv));
    assert!(!b.status().await.unwrap().owned_conversations.contains(&conv));

    // Continued through B while A lives: A runs the turn; both watchers see it.
    let second = b.submit_text(conv, "two").await.unwrap();
    assert!(second.queued);
    let seen_on_a = turn_events(&mut on_a, second.turn_id).await;
    assert!(completed_with(&seen_on_a, "two"));
    assert!(seen_on_a.iter().any(|e| matches!(e.body, EventBody::TextDelta { .. })), "A's watcher gets deltas");
    assert!(completed_with(&turn_events(&mut on_b, second.turn_id).await, "two"));
    let texts = |entries: Vec<superpi_proto::Entry>| entries.iter().map(|e| e.message.text()).collect::<Vec<_>>();
    assert_eq!(texts(b.history(conv).await.unwrap().entries), texts(a.history(conv).await.unwrap().entries));

    // A killed during a turn submitted through B; a prompt submitted through B meanwhile waits
    // in the database for whoever runs the conversation next.
    let third = b.submit_text(conv, "@tool bash {\"command\": \"sleep 30\"}").await.unwrap();
    next_event(&mut on_b, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    machine_a.kill_kernel();
    let fourth = b.submit_text(conv, "four").await.unwrap();
    let end = next_event(&mut on_b, |e| e.turn_id == Some(third.turn_id) && e.body.is_turn_end()).await;
    assert!(matches!(&end.body, EventBody::TurnError { error } if error.contains("interrupted")), "{end:?}");
    assert!(completed_with(&turn_events(&mut on_b, fourth.turn_id).await, "four"));
    assert!(b.status().await.unwrap().owned_conversations.contains(&conv));
    let fifth = b.submit_text(conv, "five").await.unwrap();
    assert!(completed_with(&turn_events(&mut on_b, fifth.turn_id).await, "five"));

    // Nothing committed was lost and no turn ran twice: the history holds each prompt once with
    // its answer (the killed call with its interrupted result) ...
    let history = b.history(conv).await.unwrap().entries;
    let kinds: Vec<&str> = history.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "tool_result",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    // ... and the stored events replay once each, in order, with one start and one end a turn.
    let mut replay = b.watch(watch_from(conv, Some(0))).await.unwrap();
    let events = turn_events(&mut replay, fifth.turn_id).await;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] > w[0]), "stored seqs out of order: {seqs:?}");
    for turn in [first.turn_id, second.turn_id, third.turn_id, fourth.turn_id, fifth.turn_id] {
        let starts =
            events.iter().filter(|e| e.turn_id == Some(turn) && matches!(e.body, EventBody::TurnStarted { .. }));
        let ends = events.iter().filter(|e| e.turn_id == Some(turn) && e.body.is_turn_end());
        assert_eq!((starts.count(), ends.count()), (1, 1), "turn {turn} started and ended once");
    }
}

/// Fencing: kernel A stalls (SIGSTOP) during a tool call, its lease runs out and B takes the
/// conversation over; when A resumes, what it would commit for the old turn (the call's result,
/// the turn's end) is refused, A stops running the conversation, and A's watcher follows it
/// through the store (it sees B's end of the turn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_kernel_that_lost_its_lease_commits_nothing_more() {
    let Some(server) = postgres_server::shared() else { return };
    let (machine_a, _kernel_a, a, _machine_b, _kernel_b, b) = two_kernels(&server.new_database()).await;

    let (conv, mut on_a) = open_and_watch(&a, &machine_a.workspace, Some("auto"), false).await;
    let turn = a.submit_text(conv, "@tool bash {\"command\": \"sleep 2\"}").await.unwrap();
    next_event(&mut on_a, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    let pid = machine_a.kernel_pid().unwrap();
    // SAFETY: signals to the kernel this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let mut on_b = b.watch(watch_from(conv, Some(0))).await.unwrap();
    let end = next_event(&mut on_b, |e| e.turn_id == Some(turn.turn_id) && e.body.is_turn_end()).await;
    assert!(matches!(&end.body, EventBody::TurnError { error } if error.contains("interrupted")), "{end:?}");
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    // A's watcher is not left in silence: it follows the conversation through the store and
    // sees the end B gave the turn.
    let end_on_a = next_event(&mut on_a, |e| e.turn_id == Some(turn.turn_id) && e.body.is_turn_end()).await;
    assert_eq!(end_on_a.seq, end.seq);
    assert!(matches!(&end_on_a.body, EventBody::TurnError { error } if error.contains("interrupted")));

    // A finds out (a refused commit, or its next renewal) and lets the conversation go.
    wait::until("kernel A lets the conversation it lost go", wait::PATIENCE, async || {
        !a.status().await.unwrap().owned_conversations.contains(&conv)
    })
    .await;
    // B continues it; the store holds one result for the call (B's "interrupted"), one end
    // for the turn, and nothing of A's after the takeover.
    let next = b.submit_text(conv, "after").await.unwrap();
    let events = turn_events(&mut on_b, next.turn_id).await;
    assert!(completed_with(&events, "after"));
    let history = b.history(conv).await.unwrap().entries;
    let results: Vec<&superpi_proto::Entry> = history.iter().filter(|e| e.kind.as_str() == "tool_result").collect();
    assert_eq!(results.len(), 1, "{history:?}");
    assert!(matches!(
        results[0].message.content.as_slice(),
        [ContentBlock::ToolResult { is_error: true, output, .. }] if output.contains("interrupted")
    ));
    let mut replay = b.watch(watch_from(conv, Some(0))).await.unwrap();
    let all = turn_events(&mut replay, next.turn_id).await;
    let ends = all.iter().filter(|e| e.turn_id == Some(turn.turn_id) && e.body.is_turn_end()).count();
    assert_eq!(ends, 1);
    // Through A, the conversation is now served from the store as B's.
    let again = a.submit_text(conv, "through a").await.unwrap();
    assert!(again.queued);
    assert!(completed_with(&turn_events(&mut on_b, again.turn_id).await, "through a"));
}

/// What only the kernel that runs a conversation can do, asked through another: a frontend
/// attached to B (interactive) is asked the permission question of a turn A runs, and its answer
/// through B lets the call run in A; while the turn waits, B says the conversation is running; a
/// mode set through B is applied and published by A (with B's ceiling); a compaction and a clear
/// through B run in A; MCP servers are not attached through B, which says why and what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frontend_on_another_kernel_answers_questions_and_changes_the_mode() {
    let Some(server) = postgres_server::shared() else { return };
    let (machine_a, _kernel_a, a, _machine_b, _kernel_b, b) = two_kernels(&server.new_database()).await;
    // Opened through A (which runs it), with nobody watching there.
    let (conv, on_a) = open_and_watch(&a, &machine_a.workspace, Some("accept-edits"), false).await;
    drop(on_a);
    assert!(a.status().await.unwrap().owned_conversations.contains(&conv));
    let mut on_b = b.watch(WatchParams { interactive: true, ..watch_from(conv, None) }).await.unwrap();

    let turn = b.submit_text(conv, "@tool bash {\"command\": \"touch made-by-bash\"}").await.unwrap();
    let asked = next_event(&mut on_b, |e| matches!(e.body, EventBody::PermissionRequest { .. })).await;
    let EventBody::PermissionRequest { request_id, .. } = asked.body else { unreachable!() };
    let info = b.open(OpenParams { conversation_id: Some(conv), ..Default::default() }).await.unwrap();
    assert_eq!(info.status, "running");
    assert!(b.list().await.unwrap().iter().any(|c| c.conversation_id == conv && c.status == "running"));
    assert_eq!(b.respond_permission(&request_id, "allow_once").await.unwrap()["accepted"], true);
    let events = turn_events(&mut on_b, turn.turn_id).await;
    assert!(events.iter().any(|e| matches!(&e.body, EventBody::ToolCompleted { is_error: false, .. })), "{events:?}");
    assert!(machine_a.workspace.join("made-by-bash").exists());
    // Answered once: the question is closed everywhere, the kernel that asked it included.
    let again = b.respond_permission(&request_id, "allow_once").await.unwrap_err();
    assert_eq!(again.code(), Some(codes::NOT_FOUND));
    let on_holder = a.respond_permission(&request_id, "reject_once").await.unwrap_err();
    assert_eq!(on_holder.code(), Some(codes::NOT_FOUND));
    let info = b.open(OpenParams { conversation_id: Some(conv), ..Default::default() }).await.unwrap();
    assert_eq!(info.status, "idle");

    // A mode set through B: A applies it and says so.
    assert_eq!(b.set_mode(conv, "plan").await.unwrap()["mode"], "plan");
    let changed = next_event(&mut on_b, |e| matches!(e.body, EventBody::ModeChanged { .. })).await;
    let EventBody::ModeChanged { mode, max_mode } = &changed.body else { unreachable!() };
    assert_eq!((mode.as_str(), max_mode.as_deref()), ("plan", Some("auto")), "B's ceiling, said by A");
    let on_a = a.open(OpenParams { conversation_id: Some(conv), ..Default::default() }).await.unwrap();
    assert_eq!(on_a.mode, "plan");
    // A compaction and a clear through B run in A, between turns, and B answers with A's answer.
    let compacted = b.compact(conv).await.unwrap();
    assert_eq!(compacted["compacted"], true, "{compacted}");
    let event = next_event(&mut on_b, |e| matches!(e.body, EventBody::CompactionCompleted { .. })).await;
    assert!(event.seq > changed.seq);
    let cleared = b.clear(conv).await.unwrap();
    assert_eq!(cleared["cleared"], true, "{cleared}");
    let event = next_event(&mut on_b, |e| matches!(e.body, EventBody::ContextCleared {})).await;
    assert_eq!(Some(event.seq), cleared["seq"].as_u64());
    assert!(a.status().await.unwrap().owned_conversations.contains(&conv), "A still runs it");
    // MCP servers would run beside the conversation, on A's machine: refused through B, saying
    // which kernel runs it and what to do.
    let holder = a.status().await.unwrap().kernel_id;
    let server = superpi_proto::method::McpServerParam {
        name: "editor".into(),
        command: "/bin/true".into(),
        ..Default::default()
    };
    let attach = OpenParams { conversation_id: Some(conv), mcp_servers: vec![server], ..Default::default() };
    let refused = b.open(attach).await.unwrap_err();
    assert_eq!(refused.code(), Some(codes::RUN_ELSEWHERE));
    let superpi_client::ClientError::Kernel(error) = &refused else { panic!("{refused}") };
    assert!(error.message.contains(&holder) && error.message.contains("idle"), "{refused}");
    assert_eq!(error.data.as_ref().unwrap()["kernel_id"], holder.as_str());
}

/// A client of a machine's kernel for a principal, as a frontend of that machine connects.
async fn as_principal(machine: &TestEnv, frontend: &str, principal: &str) -> KernelClient {
    let mut opts = machine.connect_options(frontend);
    opts.autostart = false;
    opts.principal = principal.to_string();
    KernelClient::connect(&opts).await.unwrap()
}

/// What is whose lives in the database: a conversation alice opened through A under a frontend
/// session id is found through B by that id for alice and that frontend, and for bob through B
/// it does not exist (not listed, not read, not watched, and his own session of the same id is
/// another conversation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ownership_and_frontend_session_ids_hold_through_another_kernel() {
    let Some(server) = postgres_server::shared() else { return };
    let (machine_a, _kernel_a, _a, machine_b, _kernel_b, _b) = two_kernels(&server.new_database()).await;
    let alice_on_a = as_principal(&machine_a, "editor", "alice").await;
    let session = |create| OpenParams {
        external_id: Some("s1".into()),
        workspace: Some(machine_a.workspace.display().to_string()),
        create,
        ..Default::default()
    };
    let conv = alice_on_a.open(session(None)).await.unwrap().conversation_id;
    let mut on_a = alice_on_a.watch(watch_from(conv, None)).await.unwrap();
    let turn = alice_on_a.submit_text(conv, "mine").await.unwrap();
    assert!(completed_with(&turn_events(&mut on_a, turn.turn_id).await, "mine"));

    // Alice's session id through B's frontend of the same kind: the same conversation, with its
    // history, run by A.
    let alice_on_b = as_principal(&machine_b, "editor", "alice").await;
    assert_eq!(alice_on_b.open(session(Some(false))).await.unwrap().conversation_id, conv);
    assert_eq!(alice_on_b.history(conv).await.unwrap().entries.len(), 2);
    assert!(alice_on_b.list().await.unwrap().iter().any(|c| c.conversation_id == conv));
    // Another frontend's session of that id is not alice's editor session.
    let other_frontend = as_principal(&machine_b, "gateway", "alice").await;
    let missing = other_frontend.open(session(Some(false))).await.unwrap_err();
    assert_eq!(missing.code(), Some(codes::NOT_FOUND));

    // Bob, through B: alice's conversation does not exist for him.
    let bob_on_b = as_principal(&machine_b, "editor", "bob").await;
    assert!(!bob_on_b.list().await.unwrap().iter().any(|c| c.conversation_id == conv));
    assert_eq!(bob_on_b.history(conv).await.unwrap_err().code(), Some(codes::NOT_FOUND));
    let Err(refused) = bob_on_b.watch(watch_from(conv, Some(0))).await else { panic!("bob watches alice's") };
    assert_eq!(refused.code(), Some(codes::NOT_FOUND));
    assert_eq!(bob_on_b.submit_text(conv, "not yours").await.unwrap_err().code(), Some(codes::NOT_FOUND));
    let open_by_id = OpenParams { conversation_id: Some(conv), ..Default::default() };
    assert_eq!(bob_on_b.open(open_by_id).await.unwrap_err().code(), Some(codes::NOT_FOUND));
    let bobs = bob_on_b.open(session(None)).await.unwrap().conversation_id;
    assert_ne!(bobs, conv, "bob's session s1 is a conversation of his own");
    // Nothing of bob's reached alice's conversation.
    assert_eq!(alice_on_a.history(conv).await.unwrap().entries.len(), 2);
}

/// A kernel killed while it streams an answer that a watcher through another kernel follows
/// delta by delta: the kernel that takes the conversation over numbers its events from the last
/// stored one, so they use again the seqs the dead kernel's deltas had (deltas are never
/// stored). The watcher is told to watch again from the last stored event it got, and sees the
/// killed turn end as interrupted and the next turn run, nothing skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_through_another_kernel_sees_the_end_of_a_turn_killed_while_it_streamed() {
    let Some(server) = postgres_server::shared() else { return };
    let (machine_a, _kernel_a, a, _machine_b, _kernel_b, b) = two_kernels(&server.new_database()).await;
    let (conv, on_a) = open_and_watch(&a, &machine_a.workspace, Some("auto"), false).await;
    drop(on_a);
    let mut on_b = b.watch(watch_from(conv, None)).await.unwrap();
    let first = b.submit_text(conv, "one").await.unwrap();
    assert!(completed_with(&turn_events(&mut on_b, first.turn_id).await, "one"));

    let words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi";
    let killed = b.submit_text(conv, &format!("@slow 200\n{words}")).await.unwrap();
    let mut last_delta = 0;
    for _ in 0..3 {
        let delta = next_event(&mut on_b, |e| matches!(e.body, EventBody::TextDelta { .. })).await;
        assert_eq!(delta.turn_id, Some(killed.turn_id));
        last_delta = delta.seq;
    }
    machine_a.kill_kernel();
    let mut after_kill = Vec::new();
    loop {
        let event = next_event(&mut on_b, |_| true).await;
        let end = event.turn_id == Some(killed.turn_id) && event.body.is_turn_end();
        after_kill.push(event);
        if end {
            break;
        }
    }
    let end = after_kill.last().unwrap();
    assert!(matches!(&end.body, EventBody::TurnError { error } if error.contains("interrupted")), "{end:?}");
    // What this test is about: the new holder's events came at seqs the deltas had.
    assert!(after_kill.iter().any(|e| e.seq <= last_delta), "no seq was used again: {after_kill:?}");
    assert!(
        after_kill
            .iter()
            .any(|e| matches!(&e.body, EventBody::Notice { message, .. } if message.contains("interrupted"))),
        "{after_kill:?}"
    );

    let next = b.submit_text(conv, "after").await.unwrap();
    assert!(completed_with(&turn_events(&mut on_b, next.turn_id).await, "after"));
    let history = b.history(conv).await.unwrap().entries;
    let texts: Vec<String> = history.iter().map(|e| e.message.text()).collect();
    assert_eq!(texts.first().map(String::as_str), Some("one"));
    assert_eq!(texts.last().map(String::as_str), Some("after"));
}

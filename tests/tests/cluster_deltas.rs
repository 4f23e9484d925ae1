//! Every event of a turn, deltas included, reaches a watcher through another kernel on one
//! PostgreSQL database, whichever kernel runs the turn: the one that ran the conversation when
//! the watch began, or the watcher's own kernel once the other let the conversation go or
//! died (then the watcher still follows it through the store, and its kernel relays its deltas
//! to it through the database as to any other kernel's watcher). Skipped, saying so, without
//! PostgreSQL binaries unless CI is set.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use superpi_client::{KernelClient, Subscription};
use superpi_proto::method::WatchParams;
use superpi_proto::{ContentBlock, Event, EventBody, Role};
use superpi_tests::{TestEnv, open_and_watch, postgres_server, turn_events, wait};

use crate::postgres::{two_kernels, watch_from};

/// Conversations the test continues through the other kernel: the issue lost one answer's
/// deltas in twenty.
const ROUNDS: usize = 10;

/// The text of a turn's text deltas, and that of its completed assistant messages.
pub(crate) fn delta_and_answer_texts(events: &[Event]) -> (String, String) {
    let mut deltas = String::new();
    let mut answers = String::new();
    for event in events {
        match &event.body {
            EventBody::TextDelta { delta, .. } => deltas.push_str(delta),
            EventBody::MessageCompleted { role: Role::Assistant, content, .. } => {
                for block in content {
                    if let ContentBlock::Text { text } = block {
                        answers.push_str(text);
                    }
                }
            }
            _ => {}
        }
    }
    (deltas, answers)
}

/// Each event's seq and type, in order.
fn seqs(events: &[Event]) -> Vec<(u64, String)> {
    events.iter().map(|e| (e.seq, e.type_name().to_string())).collect()
}

/// Follows a turn as a terminal does: every event until its end, each permission question
/// answered `allow_once` through `client`; with how many questions it was asked.
async fn follow_answering(client: &KernelClient, sub: &mut Subscription, turn_id: i64) -> (Vec<Event>, usize) {
    let mut events = Vec::new();
    let mut asked = 0;
    loop {
        let mut next = turn_events_until_question(sub, turn_id).await;
        let question = match &next.last().unwrap().body {
            EventBody::PermissionRequest { request_id, .. } => Some(request_id.clone()),
            _ => None,
        };
        events.append(&mut next);
        let Some(request_id) = question else { return (events, asked) };
        asked += 1;
        assert_eq!(client.respond_permission(&request_id, "allow_once").await.unwrap()["accepted"], true);
    }
}

/// The events of a turn up to its end or its next permission question.
async fn turn_events_until_question(sub: &mut Subscription, turn_id: i64) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let next = tokio::time::timeout(wait::PATIENCE, sub.next()).await;
        let event = next.unwrap_or_else(|_| panic!("no event in time after {events:?}")).expect("open");
        let stop = event.turn_id == Some(turn_id)
            && (event.body.is_turn_end() || matches!(event.body, EventBody::PermissionRequest { .. }));
        events.push(event);
        if stop {
            return events;
        }
    }
}

/// Asserts that a turn's deltas were all seen: they make its stored answers, which hold `said`.
fn assert_every_delta(events: &[Event], said: &str, round: &str) {
    let (deltas, answers) = delta_and_answer_texts(events);
    assert!(events.last().is_some_and(|e| matches!(e.body, EventBody::TurnCompleted { .. })), "{round}: {events:?}");
    assert!(answers.contains(said), "{round}: the answer holds the prompt's words: {answers:?}");
    assert_eq!(deltas, answers, "{round}: the watcher's deltas make the whole answer");
}

/// Live deltas through another kernel: a frontend that watches through B a conversation A runs
/// gets every event A's own watcher gets, deltas included (text, thinking, one delta larger than
/// a notification, which goes in parts), in the same order with the same seqs, before the turn
/// ends; the deltas make the answers that were stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_through_another_kernel_gets_the_deltas_in_order_before_the_turn_ends() {
    let Some(server) = postgres_server::shared() else { return };
    let (machine_a, _kernel_a, a, _machine_b, _kernel_b, b) = two_kernels(&server.new_database()).await;
    let (conv, mut on_a) = open_and_watch(&a, &machine_a.workspace, Some("auto"), false).await;
    let mut on_b = b.watch(watch_from(conv, None)).await.unwrap();

    let big = "é".repeat(6000);
    let prompt = format!("one two three\n{big}\n@think pondering it deeply\n@tool bash {{\"command\": \"echo hi\"}}");
    let turn = b.submit_text(conv, &prompt).await.unwrap();
    let seen_on_a = turn_events(&mut on_a, turn.turn_id).await;
    let seen_on_b = turn_events(&mut on_b, turn.turn_id).await;
    assert_eq!(seqs(&seen_on_b), seqs(&seen_on_a), "B's watcher gets what A's gets, in order");
    let deltas = |kind: &str| seen_on_b.iter().filter(|e| e.type_name() == kind).count();
    assert!(deltas("text_delta") > 4 && deltas("thinking_delta") > 2, "{:?}", seqs(&seen_on_b));
    assert!(seen_on_b.iter().any(|e| matches!(&e.body, EventBody::TextDelta { delta, .. } if delta.contains(&big))));
    let (text, answers) = delta_and_answer_texts(&seen_on_b);
    assert_eq!(text, answers, "the deltas make the answers");
    assert!(text.contains("one two three"), "{text}");
}

/// Kernels A and B on one database; A lets an unwatched conversation go at once (a short quiet
/// period). Round by round a conversation opened through A is watched through B (interactively,
/// as `superpi run` on a terminal does) while A runs it, and continued through B with a turn
/// that streams text and asks a question: in even rounds A still runs it (B queues the prompt,
/// A relays its deltas); in odd ones A let it go after B's watch began, so B runs the turn
/// itself while its watcher follows through the store. Last, A is killed after B's watch began
/// and B takes the conversation over to run the prompt queued for A. In every round the watcher
/// on B is asked the question and gets every delta of the answer (A's watcher, where there is
/// one, sees the same events at the same seqs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_through_another_kernel_gets_every_delta_whichever_kernel_runs_the_turn() {
    let Some(server) = postgres_server::shared() else { return };
    let url = server.new_database();
    let vars = [("SUPERPI_DATABASE_URL", url.as_str()), ("SUPERPI_LEASE_MS", "1500")];
    let machine_a = TestEnv::new();
    let (_kernel_a, a) = machine_a.start_kernel(&[vars[0], vars[1], ("SUPERPI_CONVERSATION_IDLE_MS", "100")]).await;
    let machine_b = TestEnv::new();
    let (_kernel_b, b) = machine_b.start_kernel(&vars).await;
    let owns =
        async |client: &KernelClient, conv: i64| client.status().await.unwrap().owned_conversations.contains(&conv);

    for round in 0..=ROUNDS {
        let (lets_go, killed) = (round % 2 == 1, round == ROUNDS);
        let name = format!("round {round} (A lets it go: {lets_go}, A killed: {killed})");
        let (conv, on_a) = open_and_watch(&a, &machine_a.workspace, Some("accept-edits"), false).await;
        let mut on_a = Some(on_a);
        let mut on_b = b.watch(WatchParams { interactive: true, ..watch_from(conv, None) }).await.unwrap();
        assert!(owns(&a, conv).await && !owns(&b, conv).await, "{name}: A runs it as B's watch begins");
        if killed {
            machine_a.kill_kernel();
        } else if lets_go {
            drop(on_a);
            on_a = None;
            wait::until("A lets the conversation go", wait::PATIENCE, async || !owns(&a, conv).await).await;
        }

        let said = format!("round {round} goes on alpha beta gamma delta");
        let prompt = format!("{said}\n@tool bash {{\"command\": \"touch round-{round}\"}}");
        let turn = b.submit_text(conv, &prompt).await.unwrap();
        let (seen_on_b, asked) = follow_answering(&b, &mut on_b, turn.turn_id).await;
        assert_eq!(asked, 1, "{name}: the watcher on B is asked the call's question: {seen_on_b:?}");
        assert_every_delta(&seen_on_b, &said, &name);
        assert!(machine_a.workspace.join(format!("round-{round}")).exists(), "{name}: the call ran");
        assert_eq!(owns(&b, conv).await, lets_go || killed, "{name}: the kernel that ran the turn");
        if let Some(on_a) = on_a.as_mut().filter(|_| !killed) {
            assert_eq!(seqs(&turn_events(on_a, turn.turn_id).await), seqs(&seen_on_b), "{name}: as A's watcher");
        }
    }
}

use serde_json::json;
use superpi_proto::Event;

use super::*;

fn delta(seq: u64, text: &str) -> Event {
    let mut event = Event::text_delta(7, Some(3), 0, text);
    event.seq = seq;
    event.timestamp_ms = 1000 + seq as i64;
    event
}

fn batch(batch: u64, events: Vec<Event>) -> Out {
    Out::Events { watch: 1, conversation_id: 7, batch, events: events.iter().map(Event::to_json).collect() }
}

#[test]
fn nothing_goes_out_before_the_watch_was_answered() {
    let mut r = WatchRenderer::new(1, 7);
    assert_eq!(r.render(&delta(1, "a")), vec![]);
    assert_eq!(r.render(&delta(2, "b")), vec![]);
    assert_eq!(r.start(), vec![batch(1, vec![delta(1, "a"), delta(2, "b")])]);
}

#[test]
fn at_most_k_batches_are_out_and_the_rest_waits_batched() {
    let mut r = WatchRenderer::new(1, 7);
    assert_eq!(r.start(), vec![]);
    assert_eq!(r.render(&delta(1, "a")), vec![batch(1, vec![delta(1, "a")])]);
    assert_eq!(r.render(&delta(2, "b")), vec![batch(2, vec![delta(2, "b")])]);
    assert_eq!(r.unacked(), 2);
    // The window is full: the next events wait, in order, none dropped.
    for (seq, text) in [(3, "c"), (4, "d"), (5, "e")] {
        assert_eq!(r.render(&delta(seq, text)), vec![]);
    }
    assert_eq!(r.pending_len(), 3);
    // One ack frees one slot: everything waiting leaves as one batch.
    assert_eq!(r.ack(1), Ok(vec![batch(3, vec![delta(3, "c"), delta(4, "d"), delta(5, "e")])]));
    assert_eq!(r.unacked(), 2);
    assert_eq!(r.pending_len(), 0);
    // A cumulative ack frees both slots.
    assert_eq!(r.ack(3), Ok(vec![]));
    assert_eq!(r.unacked(), 0);
    assert_eq!(r.render(&delta(6, "f")), vec![batch(4, vec![delta(6, "f")])]);
}

#[test]
fn acks_are_checked_and_idempotent() {
    let mut r = WatchRenderer::new(1, 7);
    r.start();
    assert_eq!(r.ack(0), Err(AckError::Zero));
    assert_eq!(r.ack(1), Err(AckError::NotSent { batch: 1, last_sent: 0 }));
    r.render(&delta(1, "a"));
    assert_eq!(r.ack(1), Ok(vec![]));
    assert_eq!(r.ack(1), Ok(vec![]));
    assert_eq!(r.unacked(), 0);
}

#[test]
fn a_long_backlog_leaves_in_bounded_batches() {
    let mut r = WatchRenderer::with_limits(1, 7, 2, 2);
    r.start();
    for seq in 1..=5 {
        r.push(&delta(seq, "x"));
    }
    assert_eq!(
        r.flush(),
        vec![batch(1, vec![delta(1, "x"), delta(2, "x")]), batch(2, vec![delta(3, "x"), delta(4, "x")])]
    );
    assert_eq!(r.ack(2), Ok(vec![batch(3, vec![delta(5, "x")])]));
}

#[test]
fn the_end_notice_follows_the_waiting_events() {
    let mut r = WatchRenderer::new(1, 7);
    r.start();
    r.render(&delta(1, "a"));
    r.render(&delta(2, "b"));
    r.render(&delta(3, "c"));
    assert_eq!(r.end("unwatched"), vec![]);
    // Events after the end are not queued.
    assert_eq!(r.render(&delta(4, "d")), vec![]);
    assert_eq!(
        r.ack(2),
        Ok(vec![
            batch(3, vec![delta(3, "c")]),
            Out::Ended { watch: 1, conversation_id: 7, reason: "unwatched".into() }
        ])
    );
    assert!(r.is_finished());
    assert_eq!(r.end("again"), vec![]);
}

#[test]
fn notifications_carry_events_in_the_kernel_wire_form() {
    let out = batch(5, vec![delta(9, "hi")]);
    assert_eq!(
        out.to_value(),
        json!({
            "jsonrpc": "2.0",
            "method": "session.event",
            "params": {
                "watch": 1,
                "conversation_id": 7,
                "batch": 5,
                "events": [{
                    "v": 1, "type": "text_delta", "conversation_id": 7, "turn_id": 3, "seq": 9,
                    "timestamp_ms": 1009, "index": 0, "delta": "hi"
                }]
            }
        })
    );
    assert!(out.to_line().ends_with(b"\n"));
    assert_eq!(out.to_line().iter().filter(|b| **b == b'\n').count(), 1);
    let ended = Out::Ended { watch: 2, conversation_id: 7, reason: "kernel connection closed".into() };
    assert_eq!(
        ended.to_value(),
        json!({"jsonrpc": "2.0", "method": "session.watch_ended",
               "params": {"watch": 2, "conversation_id": 7, "reason": "kernel connection closed"}})
    );
}

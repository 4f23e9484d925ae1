use std::sync::Arc;

use super::{Feed, FeedBounds, Published, Take};

const ROOMY: FeedBounds = FeedBounds { events: 1000, bytes: 1 << 20 };

fn event(seq: u64) -> Arc<Published> {
    Arc::new(Published { seq, json: format!("{{\"seq\":{seq}}}") })
}

fn publish(feed: &mut Feed, count: u64) {
    for _ in 0..count {
        let next = feed.head() + 1;
        feed.push(event(next), true);
    }
}

fn seqs(take: Take) -> Vec<u64> {
    match take {
        Take::Events(events) => events.iter().map(|e| e.seq).collect(),
        Take::Nothing => vec![],
        Take::Lagged => panic!("lagged"),
    }
}

#[test]
fn with_no_watcher_nothing_is_kept() {
    let mut feed = Feed::new(7, ROOMY);
    publish(&mut feed, 100);
    assert_eq!(feed.buffered(), 0);
    assert_eq!(feed.head(), 107);
    assert!(feed.all_stored());
}

#[test]
fn events_are_kept_until_the_slowest_watcher_took_them() {
    let mut feed = Feed::new(0, ROOMY);
    assert_eq!(feed.join(1), (0, 0));
    publish(&mut feed, 3);
    assert_eq!(feed.join(2), (3, 3), "a later watcher starts at the head");
    publish(&mut feed, 2);
    assert_eq!(feed.buffered(), 5);
    assert_eq!(seqs(feed.take(2, 10)), vec![4, 5]);
    assert_eq!(feed.buffered(), 5, "watcher 1 still lacks them all");
    assert_eq!(seqs(feed.take(1, 2)), vec![1, 2]);
    assert_eq!(feed.buffered(), 3);
    assert_eq!(seqs(feed.take(1, 10)), vec![3, 4, 5]);
    assert_eq!(feed.buffered(), 0);
    assert!(matches!(feed.take(1, 10), Take::Nothing));
    publish(&mut feed, 1);
    feed.leave(1);
    feed.leave(2);
    assert_eq!(feed.buffered(), 0, "leaving gives back what only the leaver lacked");
}

#[test]
fn a_watcher_past_the_bounds_is_told_it_lagged_and_the_others_go_on() {
    let mut feed = Feed::new(0, FeedBounds { events: 4, bytes: 1 << 20 });
    feed.join(1);
    feed.join(2);
    publish(&mut feed, 3);
    assert_eq!(seqs(feed.take(2, 10)), vec![1, 2, 3]);
    publish(&mut feed, 3);
    assert_eq!(feed.buffered(), 4, "bounded by count");
    assert!(matches!(feed.take(1, 10), Take::Lagged));
    assert_eq!(seqs(feed.take(2, 10)), vec![4, 5, 6]);

    let mut by_bytes = Feed::new(0, FeedBounds { events: 1000, bytes: 30 });
    by_bytes.join(1);
    publish(&mut by_bytes, 10);
    assert!(by_bytes.buffered() <= 3, "bounded by bytes: {}", by_bytes.buffered());
    assert!(matches!(by_bytes.take(1, 10), Take::Lagged));
}

#[test]
fn an_unstored_last_event_is_known() {
    let mut feed = Feed::new(0, ROOMY);
    feed.push(event(1), true);
    feed.push(event(2), false);
    assert!(!feed.all_stored(), "a delta was the last event");
    feed.push(event(3), true);
    assert!(feed.all_stored());
}

#[test]
fn a_watcher_joining_after_a_transient_delta_is_told_the_last_stored_seq() {
    let mut feed = Feed::new(0, ROOMY);
    publish(&mut feed, 2);
    feed.push(event(3), false);
    // Its replay from the store ends at 2; the delta at 3 is never sent to it, so a watcher
    // waiting for seq 3 before going live would wait for the next event.
    assert_eq!(feed.join(1), (3, 2));
    assert!(matches!(feed.take(1, 10), Take::Nothing));
    publish(&mut feed, 1);
    assert_eq!(seqs(feed.take(1, 10)), vec![4]);
}

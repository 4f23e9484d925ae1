//! A conversation's feed: the events published since the slowest of its watchers last took
//! one, and nothing more. With no watcher it holds nothing; a watcher that falls further
//! behind than its bounds loses its place (it is told it lagged and catches up from the
//! store), so a slow frontend never grows the kernel nor slows the conversation.
//!
//! `Conversation` owns it behind a lock of its own, apart from the lock its publishers hold
//! across a commit, so a watcher taking events never waits on the store. A watcher that joins
//! sees a consistent head: stored events up to it, the feed's after it.

use std::collections::VecDeque;
use std::sync::Arc;

/// An event as published: serialized once, shared by every watcher.
#[derive(Debug)]
pub(crate) struct Published {
    pub seq: u64,
    pub json: String,
}

/// How far a watcher may fall behind before it loses its place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FeedBounds {
    pub events: usize,
    pub bytes: usize,
}

/// What a watcher gets when it asks for the events after its place.
pub(crate) enum Take {
    /// The next events, oldest first (its place moves past them).
    Events(Vec<Arc<Published>>),
    /// Nothing new yet.
    Nothing,
    /// Events it lacks were dropped from the feed: it must catch up from the store.
    Lagged,
}

pub(crate) struct Feed {
    /// The seq of the last event published.
    head: u64,
    /// The seq of the last event that is in the store: a conversation whose every published
    /// event is stored can leave memory and come back from the store with the same head.
    stored_through: u64,
    /// Events with seqs `head - events.len() + 1 ..= head`, in order.
    events: VecDeque<Arc<Published>>,
    bytes: usize,
    /// Each watcher's place: the seq of the last event it took (by watcher id).
    places: Vec<(u64, u64)>,
    bounds: FeedBounds,
}

impl Feed {
    pub fn new(head: u64, bounds: FeedBounds) -> Feed {
        Feed {
            head,
            stored_through: head,
            events: VecDeque::new(),
            bytes: 0,
            places: Vec::new(),
            bounds: FeedBounds { events: bounds.events.max(1), bytes: bounds.bytes.max(1) },
        }
    }

    pub fn head(&self) -> u64 {
        self.head
    }

    /// Whether every event published is in the store (a transient delta, or an event whose
    /// commit failed, is not).
    pub fn all_stored(&self) -> bool {
        self.stored_through == self.head
    }

    /// Appends the next event (its seq is `head + 1`); kept only while a watcher lacks it.
    pub fn push(&mut self, event: Arc<Published>, stored: bool) {
        self.head = event.seq;
        if stored {
            self.stored_through = event.seq;
        }
        if self.places.is_empty() {
            return;
        }
        self.bytes += event.json.len();
        self.events.push_back(event);
        self.trim();
    }

    /// A watcher takes its place at the head (what came before is in the store, but for the
    /// transient deltas, which it never gets); returns the head and the last stored seq.
    pub fn join(&mut self, watcher: u64) -> (u64, u64) {
        self.places.push((watcher, self.head));
        (self.head, self.stored_through)
    }

    pub fn leave(&mut self, watcher: u64) {
        self.places.retain(|(id, _)| *id != watcher);
        self.trim();
    }

    /// Up to `most` events after the watcher's place.
    pub fn take(&mut self, watcher: u64, most: usize) -> Take {
        let Some(index) = self.places.iter().position(|(id, _)| *id == watcher) else { return Take::Lagged };
        let place = self.places[index].1;
        let first = self.head - self.events.len() as u64;
        if place < first {
            return Take::Lagged;
        }
        let skip = (place - first) as usize;
        if skip >= self.events.len() {
            return Take::Nothing;
        }
        let taken: Vec<Arc<Published>> = self.events.iter().skip(skip).take(most.max(1)).cloned().collect();
        self.places[index].1 = taken.last().map_or(place, |event| event.seq);
        self.trim();
        Take::Events(taken)
    }

    /// Drops what every watcher has taken, then the oldest events past the bounds.
    fn trim(&mut self) {
        let slowest = self.places.iter().map(|(_, place)| *place).min().unwrap_or(self.head);
        while let Some(front) = self.events.front() {
            let over = self.events.len() > self.bounds.events || self.bytes > self.bounds.bytes;
            if front.seq > slowest && !over {
                break;
            }
            self.bytes -= front.json.len();
            self.events.pop_front();
        }
        // A burst's room is given back once the watchers have caught up.
        if self.events.capacity() > 1024 && self.events.len() < self.events.capacity() / 4 {
            self.events.shrink_to(self.events.len() * 2);
        }
    }

    #[cfg(test)]
    pub fn buffered(&self) -> usize {
        self.events.len()
    }
}

#[cfg(test)]
#[path = "feed_tests.rs"]
mod tests;

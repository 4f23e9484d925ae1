//! Where the reader task sends event frames: one channel per live subscription, and a
//! bounded hold for frames that arrive before their watch's answer reached the caller.

use std::collections::{HashMap, HashSet};

use superpi_proto::Event;
use tokio::sync::mpsc;

/// What a subscription receives.
pub(crate) enum SubMessage {
    Events(Vec<Event>),
    Lagged(u64),
}

pub(crate) type SubReceiver = mpsc::UnboundedReceiver<SubMessage>;

/// Where event frames go: live subscriptions, and frames that arrived before their watch's
/// answer was handed to the caller.
#[derive(Default)]
pub(crate) struct SubTable {
    live: HashMap<u64, mpsc::UnboundedSender<SubMessage>>,
    early: HashMap<u64, Vec<SubMessage>>,
    /// Subscriptions ended before they were registered: they get what they held, then end.
    ended_early: HashSet<u64>,
    /// The connection is gone: a subscription registered from now on ends after what it held
    /// (its watch's answer can reach the caller after the reader saw the socket close).
    closed: bool,
}

/// Frames kept for subscriptions not yet registered (bounded: a stray id cannot grow it).
const EARLY_LIMIT: usize = 4096;

impl SubTable {
    pub(crate) fn register(&mut self, id: u64) -> SubReceiver {
        let (tx, rx) = mpsc::unbounded_channel();
        for message in self.early.remove(&id).unwrap_or_default() {
            let _ = tx.send(message);
        }
        // Ended already: the sender goes now, so the receiver ends after what it holds.
        if !self.ended_early.remove(&id) && !self.closed {
            self.live.insert(id, tx);
        }
        rx
    }

    pub(crate) fn remove(&mut self, id: u64) {
        self.live.remove(&id);
        self.early.remove(&id);
        self.ended_early.remove(&id);
    }

    /// Ends a subscription from the kernel's side: it gets what it was sent before, then
    /// nothing more, whether or not its watch's caller has registered it yet.
    pub(crate) fn end(&mut self, id: u64) {
        if self.live.remove(&id).is_none() && self.ended_early.len() < EARLY_LIMIT {
            self.ended_early.insert(id);
        }
    }

    pub(crate) fn route(&mut self, id: u64, message: SubMessage) {
        match self.live.get(&id) {
            Some(tx) => {
                let _ = tx.send(message);
            }
            // What follows an end would come after a gap: dropped.
            None if self.ended_early.contains(&id) => {}
            None => {
                let held: usize = self.early.values().map(Vec::len).sum();
                if held < EARLY_LIMIT {
                    self.early.entry(id).or_default().push(message);
                }
            }
        }
    }

    /// The connection ended: every subscription ends, and so does any registered later.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.live.clear();
        self.early.clear();
        self.ended_early.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(rx: &mut SubReceiver) -> Option<usize> {
        match rx.try_recv() {
            Ok(SubMessage::Events(events)) => Some(events.len()),
            Ok(SubMessage::Lagged(_)) => panic!("a lag"),
            Err(_) => None,
        }
    }

    #[test]
    fn frames_before_the_register_are_handed_over_first() {
        let mut table = SubTable::default();
        table.route(7, SubMessage::Events(Vec::new()));
        let mut rx = table.register(7);
        assert_eq!(events(&mut rx), Some(0));
        table.route(7, SubMessage::Events(Vec::new()));
        assert_eq!(events(&mut rx), Some(0));
        assert!(!rx.is_closed(), "a live subscription stays open");
    }

    #[test]
    fn a_subscription_registered_after_the_connection_closed_ends() {
        let mut table = SubTable::default();
        table.close();
        // The watch's answer reached its caller after the reader saw the socket close: the
        // receiver must end rather than wait for frames nobody will route.
        let mut rx = table.register(3);
        assert!(rx.is_closed());
        assert_eq!(events(&mut rx), None);
    }

    #[test]
    fn closing_ends_the_live_subscriptions() {
        let mut table = SubTable::default();
        let rx = table.register(1);
        table.close();
        assert!(rx.is_closed());
    }
}

//! A connection's outgoing frames: a queue bounded in bytes, feeding the connection's writer.
//!
//! A sender waits while the queue holds `capacity` bytes not yet written, so a peer that stops
//! reading holds back what is sent to it (its requests wait to be answered, its forwarders
//! wait for room and then lag) and never grows the kernel's memory. Frames stay within the
//! frame limit: answers are checked in `Peer::send`, event batches are cut in
//! `subscription.rs`.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// Bytes a connection may have queued and unwritten before its senders wait.
pub(crate) const OUTBOX_BYTES: usize = 32 * 1024 * 1024;

/// A queued frame and its share of the byte budget, returned when it is written.
pub(crate) struct Queued {
    pub frame: Bytes,
    _room: OwnedSemaphorePermit,
}

#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Queued>,
    room: Arc<Semaphore>,
    capacity: usize,
    frame_limit: usize,
}

impl Outbox {
    pub fn new(capacity: usize, frame_limit: usize) -> (Outbox, mpsc::UnboundedReceiver<Queued>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let room = Arc::new(Semaphore::new(capacity));
        (Outbox { tx, room, capacity, frame_limit }, rx)
    }

    /// The largest frame the peer takes.
    pub fn frame_limit(&self) -> usize {
        self.frame_limit
    }

    /// Queues a frame once there is room for it. False when the connection is gone.
    pub async fn send(&self, frame: Bytes) -> bool {
        // A frame larger than the whole budget waits for an empty queue.
        let cost = frame.len().clamp(1, self.capacity) as u32;
        let Ok(room) = self.room.clone().acquire_many_owned(cost).await else { return false };
        self.tx.send(Queued { frame, _room: room }).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_sender_waits_while_the_queue_is_full_and_goes_on_once_a_frame_is_written() {
        let (outbox, mut rx) = Outbox::new(10, 100);
        assert!(outbox.send(Bytes::from_static(b"0123456")).await);
        let waiting = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.send(Bytes::from_static(b"abcdef")).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "7 + 6 bytes exceed the room of 10");
        let written = rx.recv().await.unwrap();
        assert_eq!(&written.frame[..], b"0123456");
        drop(written);
        assert!(waiting.await.unwrap());
        assert_eq!(&rx.recv().await.unwrap().frame[..], b"abcdef");
        drop(rx);
        assert!(!outbox.send(Bytes::from_static(b"x")).await, "the connection is gone");
    }
}

//! The renderer of one watch: kernel events into `session.event` notifications, ack-clocked.
//!
//! A synchronous state machine, no I/O. Events keep the kernel's flat wire form (the RPC
//! rendering of an event is the event itself), held as JSON text from the moment they arrive
//! (half the memory of the typed event while they wait); what this owns is the batching. At most
//! `window` (K = 2) batches are out unacknowledged; events produced meanwhile wait in order
//! and leave together in the next batch once an ack frees a slot: batched, never dropped.

use std::collections::VecDeque;

use serde_json::{Value, json};
use superpi_proto::Event;

/// The notification that carries a batch of events.
pub const EVENT_METHOD: &str = "session.event";
/// The notification that ends a watch.
pub const ENDED_METHOD: &str = "session.watch_ended";

/// Unacknowledged batches a watch may have out (the K of the ack clock).
pub const DEFAULT_WINDOW: u64 = 2;
/// The most events one batch carries; the rest wait for the next one.
pub const DEFAULT_MAX_BATCH: usize = 4096;

/// A notification of a watch.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// `events`: each event's JSON text, in order.
    Events {
        watch: u64,
        conversation_id: i64,
        batch: u64,
        events: Vec<String>,
    },
    Ended {
        watch: u64,
        conversation_id: i64,
        reason: String,
    },
}

impl Out {
    /// The notification as one protocol line (newline included). Events are written straight
    /// into the line, each once.
    pub fn to_line(&self) -> Vec<u8> {
        match self {
            Out::Events { watch, conversation_id, batch, events } => {
                let mut out = Vec::with_capacity(128 + events.len() * 160);
                out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"");
                out.extend_from_slice(EVENT_METHOD.as_bytes());
                out.extend_from_slice(
                    format!("\",\"params\":{{\"watch\":{watch},\"conversation_id\":{conversation_id},\"batch\":{batch},\"events\":")
                        .as_bytes(),
                );
                superpi_proto::message::push_json_array(&mut out, events.iter().map(String::as_str));
                out.extend_from_slice(b"}}\n");
                out
            }
            Out::Ended { watch, conversation_id, reason } => crate::envelope::to_line(&crate::envelope::notification(
                ENDED_METHOD,
                json!({"watch": watch, "conversation_id": conversation_id, "reason": reason}),
            )),
        }
    }

    /// The notification as a JSON value (tests and logs).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.to_line()).unwrap_or(Value::Null)
    }
}

/// Why an ack was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AckError {
    #[error("batch numbers start at 1")]
    Zero,
    #[error("batch {batch} was not sent (the last one sent is {last_sent})")]
    NotSent { batch: u64, last_sent: u64 },
}

/// The state of one watch's notifications.
#[derive(Debug)]
pub struct WatchRenderer {
    watch: u64,
    conversation_id: i64,
    window: u64,
    max_batch: usize,
    /// Nothing goes out before the watch's answer did.
    started: bool,
    /// The number of the last batch sent (batches count from 1).
    sent: u64,
    /// Every batch up to this one is acknowledged.
    acked: u64,
    pending: VecDeque<String>,
    ended: Option<String>,
    end_sent: bool,
}

impl WatchRenderer {
    pub fn new(watch: u64, conversation_id: i64) -> Self {
        Self::with_limits(watch, conversation_id, DEFAULT_WINDOW, DEFAULT_MAX_BATCH)
    }

    pub fn with_limits(watch: u64, conversation_id: i64, window: u64, max_batch: usize) -> Self {
        WatchRenderer {
            watch,
            conversation_id,
            window: window.max(1),
            max_batch: max_batch.max(1),
            started: false,
            sent: 0,
            acked: 0,
            pending: VecDeque::new(),
            ended: None,
            end_sent: false,
        }
    }

    /// Lets notifications out (called once the watch's answer is on its way).
    pub fn start(&mut self) -> Vec<Out> {
        self.started = true;
        self.flush()
    }

    /// Takes one event and says what may go out now.
    pub fn render(&mut self, event: &Event) -> Vec<Out> {
        self.push(event);
        self.flush()
    }

    /// Queues an event without sending anything.
    pub fn push(&mut self, event: &Event) {
        if self.ended.is_none() {
            let json = serde_json::to_string(event).unwrap_or_else(|_| "null".to_string());
            self.pending.push_back(json);
        }
    }

    /// Acknowledges batch `batch` and every earlier one; frees slots for waiting events.
    /// Acknowledging a batch twice is harmless.
    pub fn ack(&mut self, batch: u64) -> Result<Vec<Out>, AckError> {
        if batch == 0 {
            return Err(AckError::Zero);
        }
        if batch > self.sent {
            return Err(AckError::NotSent { batch, last_sent: self.sent });
        }
        self.acked = self.acked.max(batch);
        Ok(self.flush())
    }

    /// The watch ends (unwatched, or the kernel ended it): waiting events still go out,
    /// then one `session.watch_ended`.
    pub fn end(&mut self, reason: &str) -> Vec<Out> {
        if self.ended.is_none() {
            self.ended = Some(reason.to_string());
        }
        self.flush()
    }

    /// Drops the events waiting for a slot (the client unwatched).
    pub fn discard_pending(&mut self) {
        self.pending.clear();
    }

    /// What may go out now: batches while the window has room, then the end notice.
    pub fn flush(&mut self) -> Vec<Out> {
        let mut out = Vec::new();
        if !self.started {
            return out;
        }
        while self.unacked() < self.window && !self.pending.is_empty() {
            let take = self.pending.len().min(self.max_batch);
            let events: Vec<String> = self.pending.drain(..take).collect();
            self.sent += 1;
            out.push(Out::Events {
                watch: self.watch,
                conversation_id: self.conversation_id,
                batch: self.sent,
                events,
            });
        }
        if self.pending.is_empty()
            && !self.end_sent
            && let Some(reason) = &self.ended
        {
            self.end_sent = true;
            out.push(Out::Ended { watch: self.watch, conversation_id: self.conversation_id, reason: reason.clone() });
        }
        out
    }

    /// Batches sent and not yet acknowledged.
    pub fn unacked(&self) -> u64 {
        self.sent - self.acked
    }

    /// Events waiting for a slot.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    pub fn last_sent(&self) -> u64 {
        self.sent
    }

    pub fn is_finished(&self) -> bool {
        self.end_sent
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

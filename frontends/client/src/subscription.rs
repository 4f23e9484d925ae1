//! An event subscription: a stream of events with credit acks and lag recovery.

use std::collections::VecDeque;

use superpi_proto::Event;
use superpi_proto::method::{WatchParams, WatchResult};

use crate::ClientError;
use crate::connection::KernelClient;
use crate::routing::{SubMessage, SubReceiver};

impl KernelClient {
    /// Subscribes to a conversation's events. Acks and lag recovery are handled by the
    /// returned [`Subscription`].
    pub async fn watch(&self, params: WatchParams) -> Result<Subscription, ClientError> {
        let (result, rx) = self.rewatch(params.clone()).await?;
        Ok(Subscription::new(self.clone(), params, result, rx))
    }
}

/// Events of one conversation, in order. Acks credit back to the kernel as events are taken;
/// when the kernel reports the subscription lagged, it watches again from the last seq seen,
/// so the stored events in between are replayed (deltas are not stored: the completed
/// messages carry their text).
pub struct Subscription {
    client: KernelClient,
    params: WatchParams,
    id: u64,
    head_seq: u64,
    rx: SubReceiver,
    buffer: VecDeque<Event>,
    unacked: u64,
    ack_every: u64,
    last_seq: Option<u64>,
    /// `close` ended it already.
    closed: bool,
}

const DEFAULT_WINDOW: u64 = 1024;

impl Subscription {
    pub(crate) fn new(client: KernelClient, params: WatchParams, result: WatchResult, rx: SubReceiver) -> Self {
        let window = params.window.unwrap_or(DEFAULT_WINDOW).max(1);
        Subscription {
            client,
            params,
            id: result.subscription,
            head_seq: result.head_seq,
            rx,
            buffer: VecDeque::new(),
            unacked: 0,
            ack_every: (window / 2).max(1),
            last_seq: None,
            closed: false,
        }
    }

    /// The kernel's id of this subscription (changes after a lag recovery).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The seq of the last stored event when the watch began.
    pub fn head_seq(&self) -> u64 {
        self.head_seq
    }

    pub fn conversation_id(&self) -> i64 {
        self.params.conversation_id
    }

    /// The next event, or `None` when the connection closed or the watch ended.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                self.unacked += 1;
                if self.unacked >= self.ack_every {
                    self.client.ack(self.id, self.unacked);
                    self.unacked = 0;
                }
                // Only stored events are positions to resume from: a delta's seq is not kept
                // across a kernel restart.
                if event.seq > 0 && !event.body.is_transient() {
                    self.last_seq = Some(event.seq);
                }
                return Some(event);
            }
            // About to wait: credit back what was taken so the kernel never waits on us.
            if self.unacked > 0 {
                self.client.ack(self.id, self.unacked);
                self.unacked = 0;
            }
            match self.rx.recv().await? {
                SubMessage::Events(events) => self.buffer.extend(events),
                SubMessage::Lagged(resume_from) => {
                    tracing::debug!(subscription = self.id, resume_from, "subscription lagged; catching up");
                    self.client.forget(self.id);
                    let mut params = self.params.clone();
                    params.from_seq = Some(self.last_seq.unwrap_or(resume_from).min(resume_from));
                    let (result, rx) = self.client.rewatch(params).await.ok()?;
                    self.id = result.subscription;
                    self.rx = rx;
                    self.unacked = 0;
                }
            }
        }
    }

    /// Ends the watch and waits for the kernel's answer.
    pub async fn close(mut self) {
        self.closed = true;
        let _ = self.client.unwatch(self.id).await;
    }
}

impl Drop for Subscription {
    /// A dropped subscription is ended in the kernel too (not only forgotten here), so the
    /// kernel stops forwarding and its interactive-watcher count stays right.
    fn drop(&mut self) {
        if !self.closed {
            self.client.unwatch_in_background(self.id);
        }
    }
}

//! A watcher's subscription: replay from the store, then live events, within a credit window.
//!
//! The window bounds what is in flight to the frontend; acks refill it. A frontend that
//! falls further behind than the conversation's live buffer gets `lagged` and catches up from
//! the store, so a slow frontend never slows a conversation.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use superpi_proto::KernelMessage;
use superpi_proto::message::{Lagged, encode_event_batch};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::conversation::{Conversation, Published};
use crate::store::Store;

/// Events the kernel sends before an ack, by default.
pub(crate) const DEFAULT_WINDOW: u64 = 1024;
const MAX_BATCH: usize = 512;

pub(crate) struct SubscriptionHandle {
    credits: Arc<Semaphore>,
    in_flight: Arc<AtomicU64>,
    task: Option<JoinHandle<()>>,
}

impl SubscriptionHandle {
    /// Credits `count` processed events back (never more than were sent and not yet acked).
    pub fn ack(&self, count: u64) {
        let mut current = self.in_flight.load(Ordering::Relaxed);
        loop {
            let granted = count.min(current);
            match self.in_flight.compare_exchange(current, current - granted, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => {
                    self.credits.add_permits(granted as usize);
                    return;
                }
                Err(actual) => current = actual,
            }
        }
    }
}

impl SubscriptionHandle {
    /// Waits for the forwarder to end by itself (it does once the kernel is closing, after
    /// sending what the conversation published).
    pub async fn finish(mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for SubscriptionHandle {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

pub(crate) struct WatchSpec {
    pub id: u64,
    pub from_seq: Option<u64>,
    pub window: u64,
    pub interactive: bool,
    pub reads_files: bool,
}

/// Starts a subscription. Its task waits for `start` so the watch's response goes out
/// before its first event. Returns the handle and the head seq at subscription time. Once
/// `closing` fires (the kernel stops, its turns have ended) the forwarder sends what is left,
/// whatever the credit, and ends.
pub(crate) fn start(
    store: Arc<Store>,
    closing: CancellationToken,
    conv: Arc<Conversation>,
    spec: WatchSpec,
    out: mpsc::UnboundedSender<Bytes>,
    start: oneshot::Receiver<()>,
) -> (SubscriptionHandle, u64) {
    let window = spec.window.clamp(1, 1 << 20);
    let credits = Arc::new(Semaphore::new(window as usize));
    let in_flight = Arc::new(AtomicU64::new(0));
    let (head, rx) = conv.subscribe();
    // Counted before the watch is answered: a question asked right after the answer must
    // already see this watcher.
    let interactive = spec.interactive.then(|| WatcherGuard::count(&conv, |c| &c.interactive_watchers));
    let reads_files = spec.reads_files.then(|| WatcherGuard::count(&conv, |c| &c.file_readers));
    let forwarder =
        Forwarder { store, closing, conv, spec, out, credits: credits.clone(), in_flight: in_flight.clone(), window };
    let task = tokio::spawn(async move {
        let _counted = (interactive, reads_files);
        if start.await.is_ok() {
            forwarder.run(head, rx).await;
        }
    });
    (SubscriptionHandle { credits, in_flight, task: Some(task) }, head)
}

struct Forwarder {
    store: Arc<Store>,
    closing: CancellationToken,
    conv: Arc<Conversation>,
    spec: WatchSpec,
    out: mpsc::UnboundedSender<Bytes>,
    credits: Arc<Semaphore>,
    in_flight: Arc<AtomicU64>,
    window: u64,
}

/// Counts a watcher in one of the conversation's counters for as long as its forwarder lives.
struct WatcherGuard {
    conv: Arc<Conversation>,
    counter: fn(&Conversation) -> &std::sync::atomic::AtomicUsize,
}

impl WatcherGuard {
    fn count(conv: &Arc<Conversation>, counter: fn(&Conversation) -> &std::sync::atomic::AtomicUsize) -> WatcherGuard {
        counter(conv).fetch_add(1, Ordering::Relaxed);
        WatcherGuard { conv: conv.clone(), counter }
    }
}

impl Drop for WatcherGuard {
    fn drop(&mut self) {
        (self.counter)(&self.conv).fetch_sub(1, Ordering::Relaxed);
    }
}

impl Forwarder {
    async fn run(self, head: u64, mut rx: tokio::sync::broadcast::Receiver<Arc<Published>>) {
        let mut last_sent = self.spec.from_seq.unwrap_or(head);
        if let Some(from) = self.spec.from_seq
            && from < head
        {
            let stored = match self.store.events_between(self.conv.id, from, head) {
                Ok(stored) => stored,
                Err(err) => {
                    tracing::error!("replaying conversation {}: {err}", self.conv.id);
                    return;
                }
            };
            for chunk in stored.chunks(self.max_batch()) {
                let events: Vec<&str> = chunk.iter().map(|(_, json)| json.as_str()).collect();
                if !self.send(&events).await {
                    return;
                }
                last_sent = chunk.last().map(|(seq, _)| *seq).unwrap_or(last_sent);
            }
        }
        last_sent = last_sent.max(head);

        let mut batch: Vec<Arc<Published>> = Vec::with_capacity(self.max_batch());
        loop {
            let received = tokio::select! {
                received = rx.recv() => received,
                _ = self.closing.cancelled() => {
                    // Turns have ended: send what is left, whatever the credit, and end.
                    let rest: Vec<Arc<Published>> =
                        std::iter::from_fn(|| rx.try_recv().ok()).filter(|ev| ev.seq > last_sent).collect();
                    for chunk in rest.chunks(self.max_batch()) {
                        let events: Vec<&str> = chunk.iter().map(|ev| ev.json.as_str()).collect();
                        if !self.send_frame(&events) {
                            return;
                        }
                    }
                    return;
                }
            };
            let lagged = match received {
                Ok(ev) => {
                    if ev.seq > last_sent {
                        batch.push(ev);
                    }
                    let mut lagged = false;
                    while batch.len() < self.max_batch() {
                        match rx.try_recv() {
                            Ok(ev) if ev.seq > last_sent => batch.push(ev),
                            Ok(_) => {}
                            Err(TryRecvError::Lagged(_)) => {
                                lagged = true;
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    lagged
                }
                Err(RecvError::Lagged(_)) => true,
                Err(RecvError::Closed) => return,
            };
            if !batch.is_empty() {
                let events: Vec<&str> = batch.iter().map(|ev| ev.json.as_str()).collect();
                if !self.send(&events).await {
                    return;
                }
                last_sent = batch.last().map(|ev| ev.seq).unwrap_or(last_sent);
                batch.clear();
            }
            if lagged {
                let notice = KernelMessage::Lagged(Lagged { subscription: self.spec.id, resume_from_seq: last_sent });
                let _ = self.out.send(Bytes::from(superpi_proto::frame::encode(&notice)));
                return;
            }
        }
    }

    fn max_batch(&self) -> usize {
        MAX_BATCH.min(self.window as usize).max(1)
    }

    /// Sends events in frames as credit allows: never more in flight than the window, and
    /// never waiting for more credit than one event while some is available. False when the
    /// connection is gone.
    async fn send(&self, events: &[&str]) -> bool {
        let mut rest = events;
        while !rest.is_empty() {
            let left = rest.len();
            let credit = tokio::select! {
                credit = self.credits.acquire() => credit,
                // Closing: a watcher that stopped acking gets the rest without credit.
                _ = self.closing.cancelled() => return self.send_frame(rest),
            };
            match credit {
                Ok(permit) => permit.forget(),
                Err(_) => return false,
            }
            let extra = self.credits.available_permits().min(left - 1);
            if extra > 0
                && let Ok(permit) = self.credits.try_acquire_many(extra as u32)
            {
                permit.forget();
            }
            let (now, later) = rest.split_at(1 + extra);
            rest = later;
            if !self.send_frame(now) {
                return false;
            }
        }
        true
    }

    fn send_frame(&self, events: &[&str]) -> bool {
        self.in_flight.fetch_add(events.len() as u64, Ordering::Relaxed);
        let frame = encode_event_batch(self.spec.id, events.iter().copied());
        self.out.send(Bytes::from(frame)).is_ok()
    }
}

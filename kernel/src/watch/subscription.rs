//! A watcher's subscription: replay from the store, then live events, within a credit window.
//!
//! The window bounds what is in flight to the frontend; acks refill it. A frontend that
//! falls further behind than the conversation's feed keeps gets `lagged` and catches up from
//! the store, so a slow frontend never slows a conversation nor grows the kernel.
//!
//! Over 500 lines on purpose: replay, live delivery and the credit window share one state and
//! hand over to each other; apart, each would reach into the other's fields.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use superpi_proto::KernelMessage;
use superpi_proto::message::{Lagged, encode_event_batch};
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::conversation::feed::Take;
use crate::watch::outbox::Outbox;
use superpi_store::{LiveBatch, Store};

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
    pub opens_urls: bool,
}

/// Starts a subscription. Its task waits for `start` so the watch's response goes out
/// before its first event. Returns the handle and the last stored seq at subscription time. Once
/// `closing` fires (the kernel stops, its turns have ended) the forwarder sends what is left,
/// whatever the credit, and ends.
pub(crate) fn start(
    store: Arc<dyn Store>,
    closing: CancellationToken,
    conv: Arc<Conversation>,
    spec: WatchSpec,
    out: Outbox,
    start: oneshot::Receiver<()>,
) -> (SubscriptionHandle, u64) {
    let place = FeedPlace { conv: conv.clone(), watcher: spec.id };
    // The watcher is answered the last stored seq: the replay ends there, while a delta
    // published after it (up to the feed's head) is never sent to a watcher that joins late.
    let (head, stored) = conv.join(spec.id);
    // Counted before the watch is answered: a question asked right after the answer must
    // already see this watcher.
    let interactive = spec.interactive.then(|| WatcherGuard::count(&conv, |c| &c.interactive_watchers));
    let reads_files = spec.reads_files.then(|| WatcherGuard::count(&conv, |c| &c.file_readers));
    let opens_urls = spec.opens_urls.then(|| WatcherGuard::count(&conv, |c| &c.url_openers));
    let (forwarder, mut handle) = Forwarder::new(store, closing, conv.id, spec, out);
    handle.task = Some(tokio::spawn(async move {
        let _counted = (interactive, reads_files, opens_urls, place);
        if start.await.is_ok() {
            forwarder.run(conv, head).await;
        }
    }));
    (handle, stored)
}

/// A conversation another kernel runs, as a watcher here follows it.
pub(crate) struct Stored {
    pub conversation_id: i64,
    /// Its stored head when the watch began.
    pub head: u64,
    /// What this kernel hears of it: commits, and the deltas its kernel tells.
    pub heard: crate::watch::cluster_heads::Heard,
    /// This watcher as told to the kernel that runs it, for as long as it watches.
    pub counted: crate::watch::cluster_watchers::Counted,
}

/// Starts a subscription to a conversation another kernel runs: it sends the stored events,
/// reading the store again each time an event was committed, and between them the deltas its
/// kernel tells (that kernel sends them while it knows of watchers here: `counted`). The
/// kernel that runs the turn asks it permission questions (stored events) when it is
/// interactive, and it answers them through this kernel (`elsewhere.rs`).
pub(crate) fn start_stored(
    store: Arc<dyn Store>,
    closing: CancellationToken,
    stored: Stored,
    spec: WatchSpec,
    out: Outbox,
    start: oneshot::Receiver<()>,
) -> SubscriptionHandle {
    let Stored { conversation_id, head, heard, counted } = stored;
    let (forwarder, mut handle) = Forwarder::new(store, closing, conversation_id, spec, out);
    handle.task = Some(tokio::spawn(async move {
        let _counted = counted;
        if start.await.is_ok() {
            forwarder.run_stored(heard, head).await;
        }
    }));
    handle
}

/// How far a watcher of a conversation run elsewhere got: the last seq sent (a delta's too) and
/// the last stored one sent (where it resumes).
#[derive(Clone, Copy)]
struct Sent {
    any: u64,
    stored: u64,
}

/// Why such a watcher stops: its connection or the store failed, or a new holder used again
/// seqs it got deltas at.
enum Stop {
    Failed,
    Reused,
}

struct Forwarder {
    store: Arc<dyn Store>,
    closing: CancellationToken,
    conversation_id: i64,
    spec: WatchSpec,
    out: Outbox,
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

/// A watcher's place in the conversation's feed, given up when its forwarder ends or is
/// dropped (the feed then keeps nothing for it).
struct FeedPlace {
    conv: Arc<Conversation>,
    watcher: u64,
}

impl Drop for FeedPlace {
    fn drop(&mut self) {
        self.conv.leave(self.watcher);
    }
}

/// Stored events read from the store at a time when a watcher catches up.
const REPLAY_PAGE: usize = 512;
/// How often a watcher of a conversation run elsewhere reads the store without a notice.
const STORED_POLL: std::time::Duration = std::time::Duration::from_secs(2);
/// A batch frame holds events up to about this many bytes (and always at least one).
const BATCH_BYTES: usize = 1024 * 1024;
/// Room in a frame for the batch's envelope around its events.
const BATCH_ENVELOPE: usize = 1024;

impl Forwarder {
    /// A forwarder with its full window of credit, and the handle that acks it (its task set
    /// by the caller).
    fn new(
        store: Arc<dyn Store>,
        closing: CancellationToken,
        conversation_id: i64,
        spec: WatchSpec,
        out: Outbox,
    ) -> (Forwarder, SubscriptionHandle) {
        let window = spec.window.clamp(1, 1 << 20);
        let credits = Arc::new(Semaphore::new(window as usize));
        let in_flight = Arc::new(AtomicU64::new(0));
        let handle = SubscriptionHandle { credits: credits.clone(), in_flight: in_flight.clone(), task: None };
        let forwarder = Forwarder { store, closing, conversation_id, spec, out, credits, in_flight, window };
        (forwarder, handle)
    }

    /// Sends the stored events after `after` up to `up_to`, a page at a time (a long history
    /// never sits in memory): the last seq sent, `None` when the connection or the store failed.
    async fn catch_up(&self, after: u64, up_to: u64) -> Option<u64> {
        let mut last_sent = after;
        while last_sent < up_to {
            let page =
                match self.store.events_page(self.conversation_id, last_sent, up_to, REPLAY_PAGE, BATCH_BYTES * 4) {
                    Ok(page) => page,
                    Err(err) => {
                        tracing::error!("replaying conversation {}: {err}", self.conversation_id);
                        return None;
                    }
                };
            let Some((last, _)) = page.last() else { break };
            let last = *last;
            let events: Vec<(u64, &str)> = page.iter().map(|(seq, json)| (*seq, json.as_str())).collect();
            if !self.send(&events).await {
                return None;
            }
            last_sent = last;
        }
        Some(last_sent)
    }

    /// A conversation run elsewhere: what is stored, then what is committed as it is, with the
    /// deltas told between. Each event goes out once and in seq order: a batch of deltas after
    /// the stored events before it (committed before the deltas were told, so in the store), and
    /// stored events only up to the head heard, whose notice came after the deltas before it (a
    /// delta heard after a later stored event was sent is dropped), or, for notices lost, up to
    /// the head the poll before found. When a kernel that died
    /// while this watcher got its deltas is taken over, the new holder's events reuse the seqs
    /// of those deltas (never stored): the watcher is told it lagged, and watches again from
    /// the last stored event it got.
    async fn run_stored(self, heard: crate::watch::cluster_heads::Heard, head: u64) {
        let crate::watch::cluster_heads::Heard { mut committed, mut live } = heard;
        let Some(last_sent) = self.catch_up(self.spec.from_seq.unwrap_or(head), head).await else { return };
        let last_sent = last_sent.max(head);
        let mut sent = Sent { any: last_sent, stored: last_sent };
        let mut heard_head = *committed.borrow_and_update();
        // The stored head the last poll found: the next poll reads up to it.
        let mut polled = 0;
        // How far the next look reads the store: the head heard, or everything when notices may
        // have been lost.
        let mut look = Some(heard_head);
        let stopped = 'follow: loop {
            if let Some(up_to) = look {
                // Deltas heard before that head's notice go first.
                while let Ok(batch) = live.try_recv() {
                    if let Err(stop) = self.send_live(&batch, &mut sent).await {
                        break 'follow stop;
                    }
                }
                if let Err(stop) = self.catch_up_stored(&mut sent, up_to).await {
                    break 'follow stop;
                }
            }
            look = tokio::select! {
                batch = live.recv() => match batch {
                    Ok(batch) => {
                        if let Err(stop) = self.send_live(&batch, &mut sent).await {
                            break 'follow stop;
                        }
                        None
                    }
                    // Deltas missed are missed; the completed messages are stored.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                changed = committed.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let now = *committed.borrow_and_update();
                    // No new head: notices may have been lost (`wake_all`).
                    if now > heard_head {
                        heard_head = now;
                        Some(now)
                    } else {
                        Some(u64::MAX)
                    }
                }
                // A lost notice delays an event, never loses it: a poll reads up to the head the
                // poll before it found, not beyond, as the deltas before an event committed
                // since may still be on their way (heard after the poll, they would be old).
                _ = tokio::time::sleep(STORED_POLL) => match self.store.head_seq(self.conversation_id) {
                    Ok(head) => Some(std::mem::replace(&mut polled, head)),
                    Err(err) => {
                        tracing::warn!(conversation = self.conversation_id, "polling the stored head: {err}");
                        None
                    }
                },
                _ = self.closing.cancelled() => return,
            };
        };
        if let Stop::Reused = stopped {
            let why = "the conversation was taken over from a kernel that died during deltas this watcher got: \
                       told it lagged (it watches again from the last stored event)";
            self.lagged(sent.stored, why).await;
        }
    }

    /// Sends the stored events after the last sent, up to `up_to`, reading from the last stored
    /// one sent: a stored event at a seq a delta sent had is a seq used again by a new holder.
    async fn catch_up_stored(&self, sent: &mut Sent, up_to: u64) -> Result<(), Stop> {
        while sent.stored < up_to {
            let read = self.store.events_page(self.conversation_id, sent.stored, up_to, REPLAY_PAGE, BATCH_BYTES * 4);
            let page = match read {
                Ok(page) => page,
                Err(err) => {
                    tracing::error!("replaying conversation {}: {err}", self.conversation_id);
                    return Err(Stop::Failed);
                }
            };
            let (Some(&(first, _)), Some(&(last, _))) = (page.first(), page.last()) else { break };
            if first <= sent.any {
                return Err(Stop::Reused);
            }
            let events: Vec<(u64, &str)> = page.iter().map(|(seq, json)| (*seq, json.as_str())).collect();
            if !self.send(&events).await {
                return Err(Stop::Failed);
            }
            *sent = Sent { any: last, stored: last };
        }
        Ok(())
    }

    /// Sends a batch of deltas told by the kernel that runs the conversation, after the stored
    /// events before it.
    async fn send_live(&self, batch: &LiveBatch, sent: &mut Sent) -> Result<(), Stop> {
        // All older than what was sent: stale.
        let Some(first) = batch.events.iter().map(|(seq, _)| *seq).find(|seq| *seq > sent.any) else {
            return Ok(());
        };
        if first > sent.any + 1 {
            self.catch_up_stored(sent, first - 1).await?;
        }
        let events: Vec<(u64, &str)> =
            batch.events.iter().filter(|(seq, _)| *seq > sent.any).map(|(seq, json)| (*seq, json.as_str())).collect();
        let Some(&(last, _)) = events.last() else { return Ok(()) };
        if !self.send(&events).await {
            return Err(Stop::Failed);
        }
        sent.any = last;
        Ok(())
    }

    async fn run(self, conv: Arc<Conversation>, head: u64) {
        let Some(last_sent) = self.catch_up(self.spec.from_seq.unwrap_or(head), head).await else { return };
        let mut last_sent = last_sent.max(head);

        let mut published = conv.wake();
        loop {
            // Seen before taking: a publish after the take wakes the wait below.
            published.borrow_and_update();
            match conv.take(self.spec.id, self.max_batch()) {
                Take::Events(batch) => {
                    let events: Vec<(u64, &str)> =
                        batch.iter().filter(|ev| ev.seq > last_sent).map(|ev| (ev.seq, ev.json.as_str())).collect();
                    if !self.send(&events).await {
                        return;
                    }
                    last_sent = last_sent.max(batch.last().map_or(last_sent, |ev| ev.seq));
                }
                Take::Lagged => {
                    let why =
                        "a watcher fell behind what the feed keeps: told it lagged (it catches up from the store)";
                    return self.lagged(last_sent, why).await;
                }
                // Another kernel took the conversation over: this feed gets nothing more. Told
                // it lagged, the watcher watches again, through the store, and sees what the
                // new holder publishes (the end of the turn it took over first).
                Take::Nothing if conv.is_fenced() => {
                    let why = "another kernel took the conversation over: its watcher follows it through the store";
                    return self.lagged(last_sent, why).await;
                }
                Take::Nothing => {
                    tokio::select! {
                        changed = published.changed() => if changed.is_err() { return },
                        _ = self.closing.cancelled() => {
                            // Turns have ended: send what is left, whatever the credit, and end.
                            while let Take::Events(rest) = conv.take(self.spec.id, self.max_batch()) {
                                let events: Vec<(u64, &str)> = rest
                                    .iter()
                                    .filter(|ev| ev.seq > last_sent)
                                    .map(|ev| (ev.seq, ev.json.as_str()))
                                    .collect();
                                if !self.send_frames(&events).await {
                                    return;
                                }
                            }
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Tells the watcher to watch again from `last_sent` (it reads the store from there), and
    /// the log why.
    async fn lagged(&self, last_sent: u64, why: &str) {
        tracing::info!(
            conversation = self.conversation_id,
            subscription = self.spec.id,
            resume_from_seq = last_sent,
            "{why}"
        );
        let notice = KernelMessage::Lagged(Lagged { subscription: self.spec.id, resume_from_seq: last_sent });
        self.out.send(Bytes::from(superpi_proto::frame::encode(&notice))).await;
    }

    fn max_batch(&self) -> usize {
        MAX_BATCH.min(self.window as usize).max(1)
    }

    /// Sends events in frames as credit allows: never more in flight than the window, and
    /// never waiting for more credit than one event while some is available. False when the
    /// connection is gone.
    async fn send(&self, events: &[(u64, &str)]) -> bool {
        let mut rest = events;
        while !rest.is_empty() {
            let left = rest.len();
            let credit = tokio::select! {
                credit = self.credits.acquire() => credit,
                // Closing: a watcher that stopped acking gets the rest without credit.
                _ = self.closing.cancelled() => return self.send_frames(rest).await,
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
            if !self.send_frames(now).await {
                return false;
            }
        }
        true
    }

    /// Sends events in frames of about `BATCH_BYTES`, each within the peer's frame limit.
    async fn send_frames(&self, events: &[(u64, &str)]) -> bool {
        let most = self.out.frame_limit().saturating_sub(BATCH_ENVELOPE).max(1);
        let mut rest = events;
        while !rest.is_empty() {
            let mut bytes = 0;
            let take = rest
                .iter()
                .take_while(|(_, json)| {
                    bytes += json.len() + 1;
                    bytes <= BATCH_BYTES.min(most)
                })
                .count()
                .max(1);
            let (now, later) = rest.split_at(take);
            rest = later;
            let stand_in;
            let events: Vec<&str> = if now[0].1.len() > most {
                stand_in = self.stand_in(now[0].0, now[0].1.len());
                vec![stand_in.as_str()]
            } else {
                now.iter().map(|(_, json)| *json).collect()
            };
            self.in_flight.fetch_add(events.len() as u64, Ordering::Relaxed);
            let frame = encode_event_batch(self.spec.id, events.iter().copied());
            if !self.out.send(Bytes::from(frame)).await {
                return false;
            }
        }
        true
    }

    /// What a watcher gets in place of an event too large for any frame: a notice with its seq
    /// saying what was left out.
    fn stand_in(&self, seq: u64, bytes: usize) -> String {
        tracing::warn!(
            conversation = self.conversation_id,
            seq,
            bytes,
            "an event over the frame limit was left out of a batch"
        );
        let message = format!(
            "event {seq} of this conversation is {bytes} bytes, over the frame limit of {} bytes, and was left out",
            self.out.frame_limit()
        );
        let mut notice = superpi_proto::Event::notice(self.conversation_id, None, "error", message);
        notice.seq = seq;
        notice.to_json()
    }
}

#[cfg(test)]
#[path = "subscription_tests.rs"]
mod tests;

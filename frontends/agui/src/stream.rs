//! The pumps between a kernel subscription and an SSE body: events through the renderer,
//! held content out at its deadline, a keep-alive comment while nothing happens, and the
//! end of the client noticed (a run's client going away cancels its turn).

use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use superpi_client::{ClientError, HistoryPages, KernelClient, Subscription};
use superpi_proto::method::{SubmitParams, SubmitResult};
use superpi_proto::{Event, EventBody};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::pending::ClientCalls;
use crate::render::Renderer;
use crate::snapshot;
use crate::wire::AguiEvent;

/// A comment line every so often keeps proxies from timing the stream out and finds a
/// client that went away while nothing else was written.
const KEEPALIVE: Duration = Duration::from_secs(10);
const CHANNEL: usize = 256;
/// Kernel events read ahead of the renderer. When it is full the reader stops taking events,
/// its acks stop, and the kernel's flow control takes over (lag, then catch-up from the store).
const READ_AHEAD: usize = 1024;

struct Pump {
    client: KernelClient,
    events: mpsc::Receiver<Event>,
    /// Dropped with the pump: the reader then ends the watch.
    _reader: oneshot::Sender<()>,
    renderer: Renderer,
    tx: mpsc::Sender<Bytes>,
    stopping: watch::Receiver<bool>,
    started: Instant,
    /// Where a run notes the client-tool calls it ends on, and whose they are.
    calls: Option<(ClientCalls, String)>,
}

/// What became of a pump.
enum Step {
    Continue,
    /// The stream is over.
    Done,
    /// The client went away.
    Gone,
}

impl Pump {
    fn new(
        client: KernelClient,
        subscription: Subscription,
        renderer: Renderer,
        tx: mpsc::Sender<Bytes>,
        stopping: watch::Receiver<bool>,
    ) -> Pump {
        let (events, reader) = read(subscription);
        Pump { client, events, _reader: reader, renderer, tx, stopping, started: Instant::now(), calls: None }
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    async fn send(&self, events: Vec<AguiEvent>) -> bool {
        for event in events {
            if self.tx.send(superpi_http::sse_data(&event.to_json())).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Waits for the next thing to do: an event, a deadline, a keep-alive, the client leaving.
    /// `accept` says whether an event belongs to this stream.
    async fn step(&mut self, accept: impl Fn(&Event) -> bool) -> (Step, Option<Event>) {
        let deadline = self.renderer.deadline().map(|ms| self.started + Duration::from_millis(ms));
        tokio::select! {
            _ = self.tx.closed() => (Step::Gone, None),
            () = async { drop(self.stopping.wait_for(|stop| *stop).await) } => {
                let out = self.renderer.fail("the AG-UI server is stopping", "server_stopping", self.now_ms());
                self.send(out).await;
                (Step::Done, None)
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                let out = self.renderer.poll(self.now_ms());
                (if self.send(out).await { Step::Continue } else { Step::Gone }, None)
            }
            _ = tokio::time::sleep(KEEPALIVE) => {
                let alive = self.tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_ok();
                (if alive { Step::Continue } else { Step::Gone }, None)
            }
            event = self.events.recv() => match event {
                None => {
                    let out = self.renderer.fail("the kernel connection was lost", "kernel_unavailable", self.now_ms());
                    self.send(out).await;
                    (Step::Done, None)
                }
                Some(event) if !accept(&event) => (Step::Continue, None),
                Some(event) => {
                    // Noted before the run ends on it: its client may answer at once.
                    if let Some((calls, principal)) = &self.calls {
                        calls.note(principal, &event);
                    }
                    let out = self.renderer.render(&event, self.now_ms());
                    let mut step = if self.send(out).await { Step::Continue } else { Step::Gone };
                    if matches!(step, Step::Continue) && self.renderer.take_history_request() {
                        step = self.resync(&event).await;
                    }
                    (step, Some(event))
                }
            },
        }
    }
}

impl Pump {
    /// A `MESSAGES_SNAPSHOT` of the history up to `event` (which the renderer could not show
    /// whole: a compaction, a message whose start it missed); later events come live.
    async fn resync(&mut self, event: &Event) -> Step {
        let pages = match self.client.history_range(event.conversation_id, None, event.seq).await {
            Ok(pages) => pages,
            Err(err) => {
                tracing::warn!(conversation_id = event.conversation_id, "no history for a messages snapshot: {err}");
                return Step::Continue;
            }
        };
        let before = self.renderer.before_snapshot(self.now_ms());
        if !self.send(before).await {
            return Step::Gone;
        }
        self.snapshot(pages).await
    }

    /// Writes the snapshot of `pages`; a snapshot cut by a kernel error ends the stream.
    async fn snapshot(&mut self, pages: HistoryPages) -> Step {
        let conversation_id = pages.conversation().conversation_id;
        match snapshot::send(&self.client, pages, &self.tx).await {
            Ok(()) => Step::Continue,
            Err(snapshot::Failed::Gone) => Step::Gone,
            Err(snapshot::Failed::Unread(err)) => {
                tracing::warn!(conversation_id, "no history for a messages snapshot: {err}");
                Step::Continue
            }
            Err(snapshot::Failed::Cut(err)) => {
                tracing::warn!(conversation_id, "the history failed in the middle of a messages snapshot: {err}");
                Step::Done
            }
        }
    }
}

/// How a run's submit went, for the request handler to answer with.
pub type Submitted = oneshot::Receiver<Result<SubmitResult, ClientError>>;

/// How a run begins.
pub enum Start {
    /// A prompt: the run follows the turn it starts, queues or steers.
    Submit(SubmitParams),
    /// Answers to what turn `turn_id` waits for (the last run's interrupts, its client tools'
    /// results); the run then follows that turn.
    Continue { turn_id: i64, replies: Vec<Reply> },
}

/// One answer a continuing run gives the kernel.
pub enum Reply {
    Permission { request_id: String, option_id: String },
    Ui { request_id: String, outcome: serde_json::Value },
}

/// Where a run's client-tool calls are noted, and whose they are.
pub struct Owner {
    pub calls: ClientCalls,
    pub principal: String,
}

/// The SSE body of one run: submits `submit`, then sends the renderer's opening events and the
/// events of the submitted turn until it ends. A client that leaves before the end cancels the
/// turn, also while the submit is on its way (the kernel may already run the turn): the submit
/// happens in the task that watches the body, which the handler's caller drops when the client
/// leaves. The handler answers from [`Submitted`] (an error status when the submit failed).
pub fn spawn_run(
    client: KernelClient,
    subscription: Subscription,
    mut renderer: Renderer,
    (stopping, owner): (watch::Receiver<bool>, Owner),
    run_id: String,
    start: Start,
) -> (Body, Submitted) {
    let (tx, rx) = mpsc::channel(CHANNEL);
    let (submitted_tx, submitted) = oneshot::channel();
    let first = renderer.start_run(&run_id);
    let conversation_id = subscription.conversation_id();
    let mut pump = Pump::new(client, subscription, renderer, tx, stopping);
    pump.calls = Some((owner.calls, owner.principal));
    tokio::spawn(async move {
        let turn_id = match start {
            Start::Submit(submit) => match pump.client.submit(submit).await {
                Ok(result) => {
                    let turn_id = result.turn_id;
                    // A handler that is gone no longer waits for this: the body tells the pump so.
                    let _ = submitted_tx.send(Ok(result));
                    turn_id
                }
                Err(err) => {
                    let _ = submitted_tx.send(Err(err));
                    return;
                }
            },
            Start::Continue { turn_id, replies } => {
                let _ = submitted_tx.send(Ok(SubmitResult { turn_id, queued: false, steered: false }));
                reply(&pump.client, replies).await;
                turn_id
            }
        };
        let mut gone = !pump.send(first).await;
        while !gone {
            let (step, event) = pump.step(|e| e.turn_id.is_none_or(|t| t == turn_id)).await;
            match step {
                Step::Gone => gone = true,
                Step::Done => break,
                // The run ended on a question or a client tool: the turn goes on without it.
                Step::Continue if !pump.renderer.run_open() => break,
                Step::Continue => {
                    if event.is_some_and(|e| e.turn_id == Some(turn_id) && ends_turn(&e.body)) {
                        let out = pump.renderer.flush(pump.now_ms());
                        pump.send(out).await;
                        break;
                    }
                }
            }
        }
        if gone {
            tracing::info!(conversation_id, turn_id, "the AG-UI client left mid-run: cancelling the turn");
            if let Err(err) = pump.client.cancel(conversation_id).await {
                tracing::warn!(conversation_id, "cancelling after a disconnect: {err}");
            }
        }
    });
    (superpi_http::sse_body(rx), submitted)
}

/// The SSE body of an attached watcher: the renderer's opening, the snapshot of `pages`
/// (the history up to where the subscription starts), then every run live, until the client
/// leaves or the kernel goes away.
pub fn spawn_attach(
    client: KernelClient,
    subscription: Subscription,
    mut renderer: Renderer,
    stopping: watch::Receiver<bool>,
    run_id: &str,
    pages: HistoryPages,
) -> Body {
    let (tx, rx) = mpsc::channel(CHANNEL);
    let running = pages.conversation().status == "running";
    let first = renderer.attach_start(run_id, pages.last_plan());
    let mut pump = Pump::new(client, subscription, renderer, tx, stopping);
    tokio::spawn(async move {
        if !pump.send(first).await || !matches!(pump.snapshot(pages).await, Step::Continue) {
            return;
        }
        let opened = pump.renderer.attach_end(running);
        if pump.send(opened).await {
            while let (Step::Continue, _) = pump.step(|_| true).await {}
        }
    });
    superpi_http::sse_body(rx)
}

/// Reads a subscription in a task of its own, so that `Subscription::next` (which may be in
/// the middle of a lag recovery) is never cancelled by the pump's other branches. The watch
/// ends when the pump drops the returned sender or stops receiving.
fn read(mut subscription: Subscription) -> (mpsc::Receiver<Event>, oneshot::Sender<()>) {
    let (tx, rx) = mpsc::channel(READ_AHEAD);
    let (stop, mut stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                event = subscription.next() => match event {
                    Some(event) => {
                        if tx.send(event).await.is_err() {
                            break;
                        }
                    }
                    None => break,
                },
            }
        }
        subscription.close().await;
    });
    (rx, stop)
}

/// Gives the kernel a continuing run's answers. One it no longer waits for (answered
/// elsewhere, timed out) is only logged: the replayed turn shows what became of it.
async fn reply(client: &KernelClient, replies: Vec<Reply>) {
    for reply in replies {
        let (request_id, answered) = match reply {
            Reply::Permission { request_id, option_id } => {
                let answered = client.respond_permission(&request_id, &option_id).await;
                (request_id, answered)
            }
            Reply::Ui { request_id, outcome } => {
                let answered = client.respond_ui(&request_id, outcome).await;
                (request_id, answered)
            }
        };
        if let Err(err) = answered {
            tracing::info!(request_id, "an answer the kernel no longer waits for: {err}");
        }
    }
}

fn ends_turn(body: &EventBody) -> bool {
    body.is_turn_end()
}

//! One RPC client connection's state: who it is, its kernel connection, its watches.
//!
//! A connection reaches the kernel through one superpi-client connection of its own, made
//! at the first call that needs it, with the principal of its login (or `local`). When the
//! RPC client goes, [`Conn::shutdown`] drops every watch and that kernel connection, so the
//! kernel forgets the subscriptions at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use superpi_client::sync::lock;
use superpi_client::{ConnectOptions, KernelClient, LazyKernel, Subscription};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::auth::{LOCAL_PRINCIPAL, Tokens};
use crate::envelope::{RpcError, codes};
use crate::render::{Out, WatchRenderer};

/// Events a watch holds for a slow client before it stops taking more from the kernel (the
/// kernel then holds them back, and past its own bound the client library catches up from
/// the store by seq).
pub const MAX_PENDING: usize = 16_384;

/// What every connection of one server shares.
#[derive(Debug)]
pub struct Shared {
    pub tokens: Tokens,
    /// Locations and frontend name; principal and `remote` are set per connection.
    pub connect: ConnectOptions,
    /// The workspace of conversations opened here: the server's, never a caller's.
    pub workspace: Option<String>,
}

/// Bytes of answers queued for a client and not yet written past which the connection reads
/// no further line (a client that sends without reading stops being read).
pub const MAX_QUEUED: usize = 16 * 1024 * 1024;

/// Lines for the client, in order, with the bytes queued and not yet written counted.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    queued: Arc<Queued>,
}

#[derive(Default)]
pub struct Queued {
    bytes: AtomicUsize,
    written: Notify,
}

impl Queued {
    /// A line of `len` bytes was written.
    pub fn written(&self, len: usize) {
        self.bytes.fetch_sub(len, Ordering::Relaxed);
        self.written.notify_waiters();
    }
}

impl Outbox {
    /// The outbox, what the writer reads, and the counter it reports written lines to.
    pub fn new() -> (Outbox, mpsc::UnboundedReceiver<Vec<u8>>, Arc<Queued>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(Queued::default());
        (Outbox { tx, queued: queued.clone() }, rx, queued)
    }

    fn send(&self, line: Vec<u8>) {
        let len = line.len();
        self.queued.bytes.fetch_add(len, Ordering::Relaxed);
        if self.tx.send(line).is_err() {
            self.queued.written(len);
        }
    }

    /// Waits while more than `limit` bytes are queued unwritten (or until the writer is gone).
    pub async fn wait_for_room(&self, limit: usize) {
        loop {
            let written = self.queued.written.notified();
            if self.queued.bytes.load(Ordering::Relaxed) <= limit || self.tx.is_closed() {
                return;
            }
            written.await;
        }
    }
}

/// A watch: its renderer, and how to stop the task that feeds it.
pub(crate) struct Watch {
    renderer: Mutex<WatchRenderer>,
    /// Signalled when an ack made room for more pending events.
    room: Notify,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    task: Mutex<Option<AbortHandle>>,
}

pub struct Conn {
    pub(crate) shared: Arc<Shared>,
    principal: Mutex<Option<String>>,
    /// Made once: when it is lost the client connection ends ([`Conn::lost`]).
    kernel: LazyKernel,
    watches: Mutex<HashMap<u64, Arc<Watch>>>,
    next_watch: AtomicU64,
    out: Outbox,
    /// Background tasks to end with the connection.
    tasks: Mutex<Vec<AbortHandle>>,
    /// Fired when the kernel connection is lost: the client connection ends.
    pub(crate) lost: Arc<Notify>,
}

impl Conn {
    pub fn new(shared: Arc<Shared>, out: Outbox) -> Arc<Conn> {
        Arc::new(Conn {
            shared,
            principal: Mutex::new(None),
            kernel: LazyKernel::once(),
            watches: Mutex::new(HashMap::new()),
            next_watch: AtomicU64::new(1),
            out,
            tasks: Mutex::new(Vec::new()),
            lost: Arc::new(Notify::new()),
        })
    }

    pub(crate) fn send_line(&self, line: Vec<u8>) {
        self.out.send(line);
    }

    /// The caller's principal, or -32001 while tokens are configured and nobody logged in.
    pub fn principal(&self) -> Result<String, RpcError> {
        if !self.shared.tokens.is_enabled() {
            return Ok(LOCAL_PRINCIPAL.to_string());
        }
        lock(&self.principal)
            .clone()
            .ok_or_else(|| RpcError::new(codes::UNAUTHORIZED, "unauthorized: call auth.login with a token first"))
    }

    /// `auth.login`: checks the token. One connection acts for one principal.
    pub fn login(&self, token: &str) -> Result<Value, RpcError> {
        if !self.shared.tokens.is_enabled() {
            return Ok(json!({"principal": LOCAL_PRINCIPAL, "auth": false}));
        }
        let Some(principal) = self.shared.tokens.principal_of(token) else {
            return Err(RpcError::new(codes::UNAUTHORIZED, "unauthorized: invalid token"));
        };
        let mut current = lock(&self.principal);
        match current.as_deref() {
            Some(existing) if existing != principal => Err(RpcError::new(
                codes::FORBIDDEN,
                "this connection is logged in as another principal: open a new connection",
            )),
            _ => {
                *current = Some(principal.clone());
                Ok(json!({"principal": principal, "auth": true}))
            }
        }
    }

    /// The kernel connection, made on first use with this caller's principal.
    pub async fn kernel(self: &Arc<Self>) -> Result<KernelClient, RpcError> {
        let principal = self.principal()?;
        self.kernel
            .get_or_connect(|| async {
                let mut opts = self.shared.connect.clone();
                opts.principal = principal;
                opts.remote = true;
                let client = KernelClient::connect(&opts).await.map_err(|err| {
                    tracing::error!("connecting to the kernel: {err}");
                    RpcError::new(codes::INTERNAL_ERROR, format!("no kernel: {err}"))
                })?;
                let watcher = client.clone();
                let lost = self.lost.clone();
                let task = tokio::spawn(async move {
                    watcher.closed().await;
                    tracing::warn!("the kernel connection closed");
                    lost.notify_one();
                });
                lock(&self.tasks).push(task.abort_handle());
                Ok::<_, RpcError>(client)
            })
            .await
    }

    /// Registers a watch whose events wait until [`Conn::start_watch`]. Returns its id.
    pub(crate) fn add_watch(self: &Arc<Self>, conversation_id: i64, sub: Subscription) -> u64 {
        let id = self.next_watch.fetch_add(1, Ordering::Relaxed);
        let (stop_tx, stop_rx) = oneshot::channel();
        let watch = Arc::new(Watch {
            renderer: Mutex::new(WatchRenderer::new(id, conversation_id)),
            room: Notify::new(),
            stop: Mutex::new(Some(stop_tx)),
            task: Mutex::new(None),
        });
        lock(&self.watches).insert(id, watch.clone());
        let task = tokio::spawn(pump(Arc::downgrade(self), id, watch.clone(), sub, stop_rx));
        *lock(&watch.task) = Some(task.abort_handle());
        id
    }

    /// Lets a watch's notifications out, once its answer is queued.
    pub(crate) fn start_watch(&self, id: u64) {
        let watch = lock(&self.watches).get(&id).cloned();
        if let Some(watch) = watch {
            let mut renderer = lock(&watch.renderer);
            let outs = renderer.start();
            self.emit(id, &renderer, outs);
        }
    }

    /// `session.ack`.
    pub fn ack(&self, id: u64, batch: u64) -> Result<Value, RpcError> {
        let watch = lock(&self.watches).get(&id).cloned().ok_or_else(|| no_watch(id))?;
        let mut renderer = lock(&watch.renderer);
        let outs = renderer.ack(batch).map_err(|err| RpcError::new(codes::INVALID_PARAMS, err.to_string()))?;
        self.emit(id, &renderer, outs);
        let unacked = renderer.unacked();
        drop(renderer);
        watch.room.notify_one();
        Ok(json!({"watch": id, "batch": batch, "unacked": unacked}))
    }

    /// `session.unwatch`: waiting events are dropped and the end notice goes out now.
    pub fn unwatch(&self, id: u64) -> Result<Value, RpcError> {
        let watch = lock(&self.watches).remove(&id).ok_or_else(|| no_watch(id))?;
        if let Some(stop) = lock(&watch.stop).take() {
            let _ = stop.send(());
        }
        Ok(json!({"watch": id, "unwatched": true}))
    }

    /// Writes a watch's notifications; a watch whose end went out is forgotten. Called with
    /// the renderer locked, so batches leave in their order.
    fn emit(&self, id: u64, renderer: &WatchRenderer, outs: Vec<Out>) {
        for out in &outs {
            self.send_line(out.to_line());
        }
        if renderer.is_finished() {
            lock(&self.watches).remove(&id);
        }
    }

    /// Ends every watch now, with its end notice (the kernel connection is gone: nothing
    /// more will come, and what waits for an ack is dropped).
    pub fn end_watches(&self, reason: &str) {
        let watches: Vec<(u64, Arc<Watch>)> = lock(&self.watches).iter().map(|(id, w)| (*id, w.clone())).collect();
        for (id, watch) in watches {
            let mut renderer = lock(&watch.renderer);
            renderer.discard_pending();
            let outs = renderer.end(reason);
            self.emit(id, &renderer, outs);
        }
    }

    /// Ends everything the connection started: watches (their kernel subscriptions go with
    /// them) and background tasks.
    pub fn shutdown(&self) {
        let watches: Vec<Arc<Watch>> = lock(&self.watches).drain().map(|(_, w)| w).collect();
        for watch in watches {
            if let Some(task) = lock(&watch.task).take() {
                task.abort();
            }
        }
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
    }

    /// Watches open now (tests and metadata).
    pub fn watch_count(&self) -> usize {
        lock(&self.watches).len()
    }
}

fn no_watch(id: u64) -> RpcError {
    RpcError::new(codes::NOT_FOUND, format!("no watch {id}"))
}

/// Feeds one watch: takes the kernel's events into the renderer and writes what may go out.
async fn pump(
    conn: std::sync::Weak<Conn>,
    id: u64,
    watch: Arc<Watch>,
    mut sub: Subscription,
    mut stop: oneshot::Receiver<()>,
) {
    let reason = loop {
        // Hold off the kernel while the client is far behind.
        let full = lock(&watch.renderer).pending_len() >= MAX_PENDING;
        tokio::select! {
            biased;
            _ = &mut stop => {
                sub.close().await;
                let Some(conn) = conn.upgrade() else { return };
                let mut renderer = lock(&watch.renderer);
                renderer.discard_pending();
                let outs = renderer.end("unwatched");
                conn.emit(id, &renderer, outs);
                return;
            }
            _ = watch.room.notified(), if full => {}
            event = sub.next(), if !full => match event {
                Some(event) => {
                    let Some(conn) = conn.upgrade() else { return };
                    let mut renderer = lock(&watch.renderer);
                    renderer.push(&event);
                    let outs = renderer.flush();
                    conn.emit(id, &renderer, outs);
                }
                None => break "the kernel ended the watch",
            }
        }
    };
    let Some(conn) = conn.upgrade() else { return };
    let mut renderer = lock(&watch.renderer);
    let outs = renderer.end(reason);
    conn.emit(id, &renderer, outs);
}

//! One multiplexed connection to the kernel: a writer task, a reader task, requests by id.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::Value;
use superpi_proto::frame::{FrameReader, ReadFrame};
use superpi_proto::message::{
    Ack, ClientHello, EventBatch, KernelHello, Lagged, ProviderEnv, Request, Response, codes,
};
use superpi_proto::method::{Method, UnwatchParams, WatchParams, WatchResult};
use superpi_proto::{ClientMessage, ErrorObject, KernelMessage, frame};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::codec::{FramedRead, FramedWrite};

use crate::routing::{SubMessage, SubReceiver, SubTable};
use crate::sync::lock;
use crate::{ClientError, Locations};

/// How to reach the kernel.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub locations: Locations,
    /// The frontend's name, sent in `hello`.
    pub frontend: String,
    pub principal: String,
    /// Callers other than the local CLI: the kernel applies the remote mode ceiling.
    pub remote: bool,
    /// Start a kernel (detached) when none answers.
    pub autostart: bool,
    /// The program to start as the kernel (`PROGRAM kernel --autostarted`); default: this
    /// executable.
    pub kernel_exe: Option<PathBuf>,
    /// The most to wait for a kernel that still runs but has not opened its socket (an
    /// autostarted one, or one stopping for another's environment). The wait follows the
    /// process: it ends as soon as the kernel exits, so only a kernel that hangs meets this.
    pub start_timeout: Duration,
    /// The digests of the frontend's provider variables, sent in `hello` (default: this
    /// process's). A kernel without one of them is replaced or refuses; `None`: no check.
    pub provider_env: Option<BTreeMap<String, String>>,
}

impl ConnectOptions {
    pub fn new(locations: Locations, frontend: &str) -> Self {
        ConnectOptions {
            locations,
            frontend: frontend.to_string(),
            principal: crate::principal::LOCAL_PRINCIPAL.to_string(),
            remote: false,
            autostart: true,
            kernel_exe: None,
            start_timeout: Duration::from_secs(120),
            provider_env: Some(crate::provider_env::process_provider_env()),
        }
    }
}

type Answer = oneshot::Sender<Result<Value, ErrorObject>>;

/// The requests waiting for their answers. Closed with the connection under the same lock, so
/// a request made as the socket closes either is failed by the close or sees it.
#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, Answer>,
    closed: bool,
}

impl Pending {
    /// Waits for `id`'s answer; `false` when the connection is gone.
    fn insert(&mut self, id: u64, answer: Answer) -> bool {
        if !self.closed {
            self.waiting.insert(id, answer);
        }
        !self.closed
    }

    fn remove(&mut self, id: &u64) -> Option<Answer> {
        self.waiting.remove(id)
    }

    /// Fails every waiting request (their senders go) and any made later.
    fn close(&mut self) {
        self.closed = true;
        self.waiting.clear();
    }
}

struct Inner {
    out: mpsc::UnboundedSender<Bytes>,
    pending: Mutex<Pending>,
    subscriptions: Mutex<SubTable>,
    next_id: AtomicU64,
    closed: watch::Receiver<bool>,
    hello: KernelHello,
}

/// A connection to the kernel. Cheap to clone; all clones share one socket.
#[derive(Clone)]
pub struct KernelClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for KernelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelClient").field("kernel", &self.inner.hello).finish()
    }
}

impl KernelClient {
    /// Connects to the kernel, starting one when none answers and `autostart` is set. A
    /// kernel that dies while it accepts us (its socket file is still there) resets the
    /// connection: that is retried a few times, starting a new kernel when allowed.
    ///
    /// An autostarted kernel that lacks one of this frontend's provider variables stops for it
    /// (`KERNEL_REPLACED`): once it has exited, a kernel with this environment is started.
    pub async fn connect(opts: &ConnectOptions) -> Result<KernelClient, ClientError> {
        let mut attempt = 0;
        let mut replaced = false;
        loop {
            match Self::connect_once(opts, !replaced).await {
                Err(ClientError::Kernel(err)) if err.code == codes::KERNEL_REPLACED && !replaced => {
                    tracing::info!("{}", err.message);
                    replaced = true;
                    crate::locations::wait_for_release(&opts.locations, opts.start_timeout).await?;
                    continue;
                }
                Err(ClientError::Io(err)) if attempt < 5 && is_reset(&err) => attempt += 1,
                Err(ClientError::Closed) if attempt < 5 => attempt += 1,
                other => return other,
            }
            tracing::debug!(attempt, "the kernel connection was reset during the handshake; retrying");
            tokio::time::sleep(Duration::from_millis(10 * attempt)).await;
        }
    }

    /// `may_replace`: an autostarted kernel may stop for this frontend (once per connect, so
    /// two frontends with different variables cannot replace each other's kernel forever).
    async fn connect_once(opts: &ConnectOptions, may_replace: bool) -> Result<KernelClient, ClientError> {
        let socket = opts.locations.socket_path();
        let stream = match UnixStream::connect(&socket).await {
            Ok(stream) => stream,
            Err(err) if !opts.autostart => {
                return Err(ClientError::NoKernel(format!("{}: {err}", socket.display())));
            }
            Err(_) => {
                crate::autostart::start_and_connect(opts.kernel_exe.as_deref(), &opts.locations, opts.start_timeout)
                    .await?
            }
        };
        Self::handshake(stream, opts, may_replace).await
    }

    async fn handshake(
        stream: UnixStream,
        opts: &ConnectOptions,
        may_replace: bool,
    ) -> Result<KernelClient, ClientError> {
        let (read, write) = stream.into_split();
        let mut reader = FramedRead::new(read, FrameReader::new(frame::DEFAULT_MAX_FRAME));
        let mut writer = FramedWrite::new(write, frame::codec(frame::DEFAULT_MAX_FRAME));
        let hello = ClientMessage::Hello(ClientHello {
            protocol: superpi_proto::PROTOCOL_VERSION,
            frontend: opts.frontend.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            principal: opts.principal.clone(),
            remote: opts.remote,
            provider_env: opts
                .provider_env
                .clone()
                .map(|digests| ProviderEnv { digests, autostart: opts.autostart && may_replace }),
        });
        writer.send(Bytes::from(frame::encode(&hello))).await?;
        let first = match reader.next().await.ok_or(ClientError::Closed)?? {
            ReadFrame::Frame(first) => first,
            ReadFrame::TooLarge { len, .. } => {
                return Err(ClientError::Protocol(format!("the kernel's hello is {len} bytes, over the frame limit")));
            }
        };
        let hello = match frame::decode::<KernelMessage>(&first) {
            Ok(KernelMessage::Hello(hello)) => hello,
            Ok(KernelMessage::Response(Response { error: Some(err), .. })) => return Err(ClientError::Kernel(err)),
            Ok(other) => return Err(ClientError::Protocol(format!("expected hello, got {other:?}"))),
            Err(err) => return Err(ClientError::Protocol(err.to_string())),
        };

        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (closed_tx, closed_rx) = watch::channel(false);
        let inner = Arc::new(Inner {
            out: out_tx,
            pending: Mutex::new(Pending::default()),
            subscriptions: Mutex::new(SubTable::default()),
            next_id: AtomicU64::new(1),
            closed: closed_rx,
            hello,
        });
        tokio::spawn(write_loop(writer, out_rx));
        tokio::spawn(read_loop(reader, Arc::downgrade(&inner), closed_tx));
        Ok(KernelClient { inner })
    }

    /// What the kernel said in its `hello`.
    pub fn kernel_hello(&self) -> &KernelHello {
        &self.inner.hello
    }

    /// Resolves when the connection to the kernel is gone.
    pub async fn closed(&self) {
        let mut rx = self.inner.closed.clone();
        let _ = rx.wait_for(|closed| *closed).await;
    }

    pub fn is_closed(&self) -> bool {
        *self.inner.closed.borrow()
    }

    /// Queues a message for the kernel. One over the frame limit is refused here (the writer
    /// could not send it and would end the connection of every caller sharing it).
    pub(crate) fn send_raw(&self, message: &ClientMessage) -> Result<(), ClientError> {
        let encoded = frame::encode(message);
        if encoded.len() > frame::DEFAULT_MAX_FRAME {
            let why = format!(
                "a message of {} bytes is over the kernel's frame limit of {} bytes; it was not sent",
                encoded.len(),
                frame::DEFAULT_MAX_FRAME
            );
            tracing::warn!("{why}");
            return Err(ClientError::Protocol(why));
        }
        self.inner.out.send(Bytes::from(encoded)).map_err(|_| ClientError::Closed)
    }

    pub(crate) fn ack(&self, subscription: u64, count: u64) {
        let _ = self.send_raw(&ClientMessage::Ack(Ack { subscription, count }));
    }

    /// Calls a method by name with raw params.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        if self.is_closed() {
            return Err(ClientError::Closed);
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if !lock(&self.inner.pending).insert(id, tx) {
            return Err(ClientError::Closed);
        }
        let request = ClientMessage::Request(Request { id, method: method.to_string(), params });
        if let Err(err) = self.send_raw(&request) {
            lock(&self.inner.pending).remove(&id);
            return Err(err);
        }
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(ClientError::Kernel(err)),
            Err(_) => Err(ClientError::Closed),
        }
    }

    /// Calls a typed method and reads its typed result.
    pub async fn request<T: DeserializeOwned>(&self, method: Method) -> Result<T, ClientError> {
        let (name, params) = method.to_request();
        let value = self.call(name, params).await?;
        serde_json::from_value(value).map_err(|err| ClientError::Protocol(format!("bad result of {name}: {err}")))
    }

    pub(crate) async fn rewatch(&self, params: WatchParams) -> Result<(WatchResult, SubReceiver), ClientError> {
        let result: WatchResult = self.request(Method::SessionWatch(params)).await?;
        // The reader may already have routed this subscription's first events (they follow
        // the answer on the socket): they wait in the table and are handed over first.
        let rx = lock(&self.inner.subscriptions).register(result.subscription);
        Ok((result, rx))
    }

    /// Stops routing a subscription's frames (they are dropped until it is registered again).
    pub(crate) fn forget(&self, subscription: u64) {
        lock(&self.inner.subscriptions).remove(subscription);
    }

    /// Ends a subscription in the kernel without waiting for the answer (a dropped
    /// [`Subscription`] does this, so the kernel stops forwarding at once).
    pub(crate) fn unwatch_in_background(&self, subscription: u64) {
        self.forget(subscription);
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (name, params) = Method::SessionUnwatch(UnwatchParams { subscription }).to_request();
        // No pending entry: the answer is read and dropped.
        let _ = self.send_raw(&ClientMessage::Request(Request { id, method: name.to_string(), params }));
    }

    pub async fn unwatch(&self, subscription: u64) -> Result<(), ClientError> {
        lock(&self.inner.subscriptions).remove(subscription);
        let _: Value = self.request(Method::SessionUnwatch(UnwatchParams { subscription })).await?;
        Ok(())
    }
}

/// Feeds frames and flushes when no more are queued, so bursts share one write.
async fn write_loop(
    mut writer: FramedWrite<tokio::net::unix::OwnedWriteHalf, tokio_util::codec::LengthDelimitedCodec>,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
) {
    while let Some(frame) = rx.recv().await {
        if writer.feed(frame).await.is_err() {
            return;
        }
        while let Ok(frame) = rx.try_recv() {
            if writer.feed(frame).await.is_err() {
                return;
            }
        }
        if SinkExt::<Bytes>::flush(&mut writer).await.is_err() {
            return;
        }
    }
}

const EVENT_PREFIX: &[u8] = b"{\"type\":\"event\"";

async fn read_loop(
    mut reader: FramedRead<tokio::net::unix::OwnedReadHalf, FrameReader>,
    inner: std::sync::Weak<Inner>,
    closed: watch::Sender<bool>,
) {
    while let Some(Ok(read)) = reader.next().await {
        let Some(inner) = inner.upgrade() else { break };
        let body = match read {
            ReadFrame::Frame(body) => body,
            // The kernel keeps its frames within the limit; one that is not is skipped (by its
            // length, so the connection and its other requests go on), ends only what it was
            // for, and is said in the log.
            ReadFrame::TooLarge { len, head } => {
                refuse_oversized(&inner, len, &head);
                continue;
            }
        };
        // Event frames are the hot path: the kernel writes their tag first, so they are read
        // straight into a batch without buffering the whole message.
        if body.starts_with(EVENT_PREFIX) {
            match serde_json::from_slice::<EventBatch>(&body) {
                Ok(batch) => route(&inner, batch.subscription, SubMessage::Events(batch.events)),
                Err(err) => tracing::warn!("unreadable event frame from the kernel: {err}"),
            }
            continue;
        }
        match frame::decode::<KernelMessage>(&body) {
            Ok(KernelMessage::Response(response)) => {
                let Some(id) = response.id else {
                    tracing::warn!("kernel error: {:?}", response.error);
                    continue;
                };
                if let Some(tx) = lock(&inner.pending).remove(&id) {
                    let outcome = match (response.result, response.error) {
                        (_, Some(err)) => Err(err),
                        (Some(v), None) => Ok(v),
                        (None, None) => Ok(Value::Null),
                    };
                    let _ = tx.send(outcome);
                }
            }
            Ok(KernelMessage::Event(batch)) => route(&inner, batch.subscription, SubMessage::Events(batch.events)),
            Ok(KernelMessage::Lagged(Lagged { subscription, resume_from_seq })) => {
                route(&inner, subscription, SubMessage::Lagged(resume_from_seq))
            }
            Ok(other) => tracing::debug!("ignoring kernel message {other:?}"),
            Err(err) => tracing::warn!("unreadable frame from the kernel: {err}"),
        }
    }
    if let Some(inner) = inner.upgrade() {
        lock(&inner.pending).close();
        lock(&inner.subscriptions).close();
    }
    let _ = closed.send(true);
}

/// A frame over the limit ends what it was for, as its head says: the request it answers
/// fails with `FRAME_TOO_LARGE`, the subscription it feeds ends (here and in the kernel: its
/// events would have a gap). Nothing else on the connection is touched.
fn refuse_oversized(inner: &Inner, len: usize, head: &[u8]) {
    let over = format!("{len} bytes, over the frame limit of {} bytes", frame::DEFAULT_MAX_FRAME);
    match frame::owner(head) {
        Some(frame::FrameOwner::Response(id)) => {
            tracing::error!(request = id, "the kernel's answer is {over}: that request fails");
            if let Some(tx) = lock(&inner.pending).remove(&id) {
                let why = format!("the kernel's answer is {over}; it was skipped");
                let _ = tx.send(Err(ErrorObject::new(codes::FRAME_TOO_LARGE, why)));
            }
        }
        Some(frame::FrameOwner::Events(subscription)) => {
            tracing::error!(subscription, "an event frame of {over}: that subscription ends");
            lock(&inner.subscriptions).end(subscription);
            let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
            let (name, params) = Method::SessionUnwatch(UnwatchParams { subscription }).to_request();
            let unwatch = ClientMessage::Request(Request { id, method: name.to_string(), params });
            let _ = inner.out.send(Bytes::from(frame::encode(&unwatch)));
        }
        _ => tracing::error!("skipped a frame of {over} from the kernel, for nothing known"),
    }
}

fn route(inner: &Inner, subscription: u64, message: SubMessage) {
    lock(&inner.subscriptions).route(subscription, message);
}

fn is_reset(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(err.kind(), ConnectionReset | BrokenPipe | UnexpectedEof | ConnectionAborted)
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;

//! One frontend connection: the hello exchange, then requests, acks and subscriptions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use superpi_proto::frame::{FrameReader, ReadFrame};
use superpi_proto::message::{ClientHello, KernelHello, Response, codes};
use superpi_proto::{ClientMessage, ErrorObject, KernelMessage, frame};
use tokio::net::UnixStream;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use crate::watch::outbox::{OUTBOX_BYTES, Outbox, Queued};

use crate::kernel::Kernel;
use crate::server::peer::Peer;
use crate::server::provider_env::Verdict;
use crate::sync::lock;

pub(crate) async fn serve(kernel: Arc<Kernel>, stream: UnixStream) {
    client_connected(&kernel);
    let (read, write) = stream.into_split();
    let mut reader = FramedRead::new(read, FrameReader::new(kernel.config.max_frame));
    // What a frontend takes: superpi-client reads frames up to the default maximum.
    let frame_limit = kernel.config.max_frame.min(frame::DEFAULT_MAX_FRAME);
    let (out, out_rx) = Outbox::new(OUTBOX_BYTES, frame_limit);
    let writer = tokio::spawn(write_loop(FramedWrite::new(write, frame::codec(usize::MAX >> 1)), out_rx));

    let stop_kernel = match handshake(&kernel, &mut reader, out).await {
        Greeting::Peer(peer) => {
            let peer = Arc::new(peer);
            read_loop(&kernel, &peer, &mut reader).await;
            let subscriptions: Vec<_> = lock(&peer.subscriptions).drain().map(|(_, sub)| sub).collect();
            if kernel.closing.is_cancelled() {
                // The kernel is stopping: each watcher gets the ends of its turns first.
                for sub in subscriptions {
                    sub.finish().await;
                }
            }
            false
        }
        Greeting::Closed => false,
        Greeting::StopKernel => true,
    };
    // The writer ends when every sender is gone (the peer and any request task holding one),
    // after flushing what was queued: an error frame before a close reaches the client.
    let _ = writer.await;
    client_disconnected(&kernel);
    if stop_kernel {
        tracing::info!("stopping: a frontend has provider variables this autostarted kernel lacks");
        kernel.shutdown.cancel();
    }
}

/// How a connection's `hello` went.
enum Greeting {
    Peer(Peer),
    /// Refused, or gone before its hello.
    Closed,
    /// Refused because this kernel lacks the frontend's provider variables and stops for it.
    StopKernel,
}

fn error_frame(id: Option<u64>, code: i32, message: impl Into<String>) -> Bytes {
    Bytes::from(frame::encode(&KernelMessage::Response(Response::err(id, ErrorObject::new(code, message)))))
}

/// The refusal of a frame over the limit, to the request it was when its head says so (so its
/// caller's wait ends), else with no id.
fn too_large(len: usize, max: usize, head: &[u8]) -> Bytes {
    let id = match frame::owner(head) {
        Some(frame::FrameOwner::Request(id)) => Some(id),
        _ => None,
    };
    error_frame(
        id,
        codes::FRAME_TOO_LARGE,
        format!("a frame of {len} bytes is over the limit of {max}; it was skipped"),
    )
}

type Reader = FramedRead<tokio::net::unix::OwnedReadHalf, FrameReader>;

/// Requests of one connection handled at once before reading waits.
const MAX_REQUESTS_IN_FLIGHT: usize = 256;

async fn handshake(kernel: &Kernel, reader: &mut Reader, out: Outbox) -> Greeting {
    let first = tokio::select! {
        first = reader.next() => first,
        _ = kernel.closing.cancelled() => None,
    };
    let Some(first) = first else { return Greeting::Closed };
    let body = match first {
        Ok(ReadFrame::Frame(body)) => body,
        Ok(ReadFrame::TooLarge { len, head }) => {
            out.send(too_large(len, kernel.config.max_frame, &head)).await;
            return Greeting::Closed;
        }
        Err(err) => {
            tracing::debug!("reading a hello: {err}");
            return Greeting::Closed;
        }
    };
    let hello: ClientHello = match frame::decode::<ClientMessage>(&body) {
        Ok(ClientMessage::Hello(hello)) => hello,
        Ok(_) => {
            out.send(error_frame(None, codes::INVALID_REQUEST, "the first message must be hello")).await;
            return Greeting::Closed;
        }
        Err(frame::FrameError::NotJson(err)) => {
            out.send(error_frame(None, codes::PARSE_ERROR, format!("frame is not JSON: {err}"))).await;
            return Greeting::Closed;
        }
        Err(err) => {
            out.send(error_frame(None, codes::INVALID_REQUEST, err.to_string())).await;
            return Greeting::Closed;
        }
    };
    if hello.protocol != superpi_proto::PROTOCOL_VERSION {
        out.send(error_frame(
            None,
            codes::UNSUPPORTED_VERSION,
            format!(
                "protocol {} is not supported; this kernel speaks {}",
                hello.protocol,
                superpi_proto::PROTOCOL_VERSION
            ),
        ))
        .await;
        return Greeting::Closed;
    }
    match crate::server::provider_env::judge(kernel, &hello) {
        Verdict::Same => {}
        Verdict::Refuse(err) => {
            out.send(Bytes::from(frame::encode(&KernelMessage::Response(Response::err(None, err))))).await;
            return Greeting::Closed;
        }
        Verdict::Replace(err) => {
            out.send(Bytes::from(frame::encode(&KernelMessage::Response(Response::err(None, err))))).await;
            return Greeting::StopKernel;
        }
    }
    let reply = KernelMessage::Hello(KernelHello {
        protocol: superpi_proto::PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
        capabilities: vec!["tools".into(), "permissions".into(), "fork".into()],
    });
    out.send(Bytes::from(frame::encode(&reply))).await;
    tracing::debug!(frontend = %hello.frontend, principal = %hello.principal, "client connected");
    Greeting::Peer(Peer {
        frontend: hello.frontend,
        principal: hello.principal,
        remote: hello.remote,
        out,
        subscriptions: Mutex::new(HashMap::new()),
    })
}

async fn read_loop(kernel: &Arc<Kernel>, peer: &Arc<Peer>, reader: &mut Reader) {
    // Requests answered at once are bounded: past this many, reading waits (a peer that
    // sends without reading its answers stops being read).
    let in_flight = Arc::new(Semaphore::new(MAX_REQUESTS_IN_FLIGHT));
    loop {
        let next = tokio::select! {
            next = reader.next() => next,
            // Not at `shutdown`: watchers stay until the turns' interrupted ends reach them.
            _ = kernel.closing.cancelled() => return,
        };
        let body = match next {
            None => return,
            Some(Ok(ReadFrame::Frame(body))) => body,
            Some(Ok(ReadFrame::TooLarge { len, head })) => {
                // Its bytes are skipped by length: the connection goes on.
                tracing::warn!(frontend = %peer.frontend, "refused a frame of {len} bytes");
                peer.out.send(too_large(len, kernel.config.max_frame, &head)).await;
                continue;
            }
            Some(Err(err)) => {
                tracing::debug!(frontend = %peer.frontend, "reading from the connection: {err}");
                return;
            }
        };
        kernel.activity.touch();
        match frame::decode::<ClientMessage>(&body) {
            Ok(ClientMessage::Request(request)) => {
                let Ok(permit) = in_flight.clone().acquire_owned().await else { return };
                let (kernel, peer) = (kernel.clone(), peer.clone());
                tokio::spawn(async move {
                    let _permit = permit;
                    let id = request.id;
                    let handled =
                        crate::server::handlers::handle(&kernel, &peer, &request.method, request.params).await;
                    let response = match handled.result {
                        Ok(value) => Response::ok(id, value),
                        Err(err) => Response::err(Some(id), err),
                    };
                    peer.send(&KernelMessage::Response(response)).await;
                    if let Some(start) = handled.after_response {
                        let _ = start.send(());
                    }
                });
            }
            Ok(ClientMessage::Ack(ack)) => {
                if let Some(sub) = lock(&peer.subscriptions).get(&ack.subscription) {
                    sub.ack(ack.count);
                }
            }
            Ok(ClientMessage::Hello(_)) => {
                peer.out.send(error_frame(None, codes::INVALID_REQUEST, "hello was already exchanged")).await;
            }
            Ok(_) => {
                peer.out.send(error_frame(None, codes::INVALID_REQUEST, "unsupported message")).await;
            }
            Err(frame::FrameError::NotJson(err)) => {
                peer.out.send(error_frame(None, codes::PARSE_ERROR, format!("frame is not JSON: {err}"))).await;
            }
            Err(frame::FrameError::NotAMessage(err)) => {
                let id = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64));
                peer.out.send(error_frame(id, codes::INVALID_REQUEST, format!("not a kernel message: {err}"))).await;
            }
        }
    }
}

/// Feeds frames and flushes when nothing more is queued, so bursts share one write. A frame's
/// room in the outbox returns once it is handed to the socket's buffer.
async fn write_loop(
    mut writer: FramedWrite<tokio::net::unix::OwnedWriteHalf, LengthDelimitedCodec>,
    mut rx: mpsc::UnboundedReceiver<Queued>,
) {
    while let Some(queued) = rx.recv().await {
        if writer.feed(queued.frame.clone()).await.is_err() {
            return;
        }
        while let Ok(queued) = rx.try_recv() {
            if writer.feed(queued.frame.clone()).await.is_err() {
                return;
            }
        }
        if SinkExt::<Bytes>::flush(&mut writer).await.is_err() {
            return;
        }
    }
}

fn client_connected(kernel: &Kernel) {
    kernel.activity.client_connected();
}

fn client_disconnected(kernel: &Kernel) {
    kernel.activity.client_disconnected();
}

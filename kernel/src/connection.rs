//! One frontend connection: the hello exchange, then requests, acks and subscriptions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use superpi_proto::message::{ClientHello, KernelHello, Response, codes};
use superpi_proto::{ClientMessage, ErrorObject, KernelMessage, frame};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use crate::kernel::Kernel;
use crate::peer::Peer;
use crate::provider_env::Verdict;
use crate::sync::lock;

pub(crate) async fn serve(kernel: Arc<Kernel>, stream: UnixStream) {
    client_connected(&kernel);
    let (read, write) = stream.into_split();
    let mut reader = FramedRead::new(read, frame::codec(kernel.config.max_frame));
    let (out, out_rx) = mpsc::unbounded_channel::<Bytes>();
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

async fn handshake(
    kernel: &Kernel,
    reader: &mut FramedRead<tokio::net::unix::OwnedReadHalf, LengthDelimitedCodec>,
    out: mpsc::UnboundedSender<Bytes>,
) -> Greeting {
    let first = tokio::select! {
        first = reader.next() => first,
        _ = kernel.closing.cancelled() => None,
    };
    let Some(first) = first else { return Greeting::Closed };
    let body = match first {
        Ok(body) => body,
        Err(err) => {
            let _ = out.send(error_frame(None, codes::FRAME_TOO_LARGE, format!("unreadable frame: {err}")));
            return Greeting::Closed;
        }
    };
    let hello: ClientHello = match frame::decode::<ClientMessage>(&body) {
        Ok(ClientMessage::Hello(hello)) => hello,
        Ok(_) => {
            let _ = out.send(error_frame(None, codes::INVALID_REQUEST, "the first message must be hello"));
            return Greeting::Closed;
        }
        Err(frame::FrameError::NotJson(err)) => {
            let _ = out.send(error_frame(None, codes::PARSE_ERROR, format!("frame is not JSON: {err}")));
            return Greeting::Closed;
        }
        Err(err) => {
            let _ = out.send(error_frame(None, codes::INVALID_REQUEST, err.to_string()));
            return Greeting::Closed;
        }
    };
    if hello.protocol != superpi_proto::PROTOCOL_VERSION {
        let _ = out.send(error_frame(
            None,
            codes::UNSUPPORTED_VERSION,
            format!(
                "protocol {} is not supported; this kernel speaks {}",
                hello.protocol,
                superpi_proto::PROTOCOL_VERSION
            ),
        ));
        return Greeting::Closed;
    }
    match crate::provider_env::judge(kernel, &hello) {
        Verdict::Same => {}
        Verdict::Refuse(err) => {
            let _ = out.send(Bytes::from(frame::encode(&KernelMessage::Response(Response::err(None, err)))));
            return Greeting::Closed;
        }
        Verdict::Replace(err) => {
            let _ = out.send(Bytes::from(frame::encode(&KernelMessage::Response(Response::err(None, err)))));
            return Greeting::StopKernel;
        }
    }
    let reply = KernelMessage::Hello(KernelHello {
        protocol: superpi_proto::PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
        capabilities: vec!["tools".into(), "permissions".into(), "fork".into()],
    });
    let _ = out.send(Bytes::from(frame::encode(&reply)));
    tracing::debug!(frontend = %hello.frontend, principal = %hello.principal, "client connected");
    Greeting::Peer(Peer {
        frontend: hello.frontend,
        principal: hello.principal,
        remote: hello.remote,
        out,
        subscriptions: Mutex::new(HashMap::new()),
    })
}

async fn read_loop(
    kernel: &Arc<Kernel>,
    peer: &Arc<Peer>,
    reader: &mut FramedRead<tokio::net::unix::OwnedReadHalf, LengthDelimitedCodec>,
) {
    loop {
        let next = tokio::select! {
            next = reader.next() => next,
            // Not at `shutdown`: watchers stay until the turns' interrupted ends reach them.
            _ = kernel.closing.cancelled() => return,
        };
        let body = match next {
            None => return,
            Some(Ok(body)) => body,
            Some(Err(err)) => {
                // The length prefix cannot be trusted any more: answer, then close.
                let _ = peer.out.send(error_frame(None, codes::FRAME_TOO_LARGE, format!("bad frame: {err}")));
                return;
            }
        };
        kernel.activity.touch();
        match frame::decode::<ClientMessage>(&body) {
            Ok(ClientMessage::Request(request)) => {
                let (kernel, peer) = (kernel.clone(), peer.clone());
                tokio::spawn(async move {
                    let id = request.id;
                    let handled = crate::handlers::handle(&kernel, &peer, &request.method, request.params).await;
                    let response = match handled.result {
                        Ok(value) => Response::ok(id, value),
                        Err(err) => Response::err(Some(id), err),
                    };
                    peer.send(&KernelMessage::Response(response));
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
                let _ = peer.out.send(error_frame(None, codes::INVALID_REQUEST, "hello was already exchanged"));
            }
            Ok(_) => {
                let _ = peer.out.send(error_frame(None, codes::INVALID_REQUEST, "unsupported message"));
            }
            Err(frame::FrameError::NotJson(err)) => {
                let _ = peer.out.send(error_frame(None, codes::PARSE_ERROR, format!("frame is not JSON: {err}")));
            }
            Err(frame::FrameError::NotAMessage(err)) => {
                let id = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64));
                let _ = peer.out.send(error_frame(id, codes::INVALID_REQUEST, format!("not a kernel message: {err}")));
            }
        }
    }
}

/// Feeds frames and flushes when nothing more is queued, so bursts share one write.
async fn write_loop(
    mut writer: FramedWrite<tokio::net::unix::OwnedWriteHalf, LengthDelimitedCodec>,
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

fn client_connected(kernel: &Kernel) {
    kernel.activity.client_connected();
}

fn client_disconnected(kernel: &Kernel) {
    kernel.activity.client_disconnected();
}

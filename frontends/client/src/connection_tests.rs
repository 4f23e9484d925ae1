//! A kernel that answers and then goes away at once: whatever the caller does next ends
//! instead of waiting for frames that will never come.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use futures::{SinkExt, StreamExt};
use serde_json::json;
use superpi_proto::message::{KernelHello, Response};
use superpi_proto::method::WatchParams;
use superpi_proto::{ClientMessage, KernelMessage, Locations, frame};
use tokio::net::UnixStream;
use tokio_util::codec::Framed;

use super::*;

/// The kernel's end of a socket pair: says hello, answers the first request with `answer`,
/// and closes the socket with no pause between the answer and the close.
async fn kernel_that_answers_then_dies(stream: UnixStream, answer: serde_json::Value) {
    let mut framed = Framed::new(stream, frame::codec(frame::DEFAULT_MAX_FRAME));
    let _hello = framed.next().await.unwrap().unwrap();
    let hello =
        KernelHello { protocol: superpi_proto::PROTOCOL_VERSION, version: "t".into(), pid: 1, capabilities: vec![] };
    framed.send(Bytes::from(frame::encode(&KernelMessage::Hello(hello)))).await.unwrap();
    let request = framed.next().await.unwrap().unwrap();
    let Ok(ClientMessage::Request(request)) = frame::decode::<ClientMessage>(&request) else { panic!("a request") };
    framed.send(Bytes::from(frame::encode(&KernelMessage::Response(Response::ok(request.id, answer))))).await.unwrap();
    drop(framed);
}

async fn client_of(kernel: impl FnOnce(UnixStream) -> tokio::task::JoinHandle<()>) -> KernelClient {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let dir = std::path::PathBuf::from("/nonexistent");
    let locations = Locations::under(&dir);
    let mut opts = ConnectOptions::new(locations, "test");
    opts.provider_env = None;
    kernel(theirs);
    KernelClient::handshake(ours, &opts, false).await.unwrap()
}

// One thread: the reader task sees the close before the watch's caller runs again, which is
// the order a loaded machine produces now and then. The subscription must end, not hang.
#[tokio::test(flavor = "current_thread")]
async fn a_watch_answered_just_before_the_kernel_died_ends_its_subscription() {
    let answer = json!({"subscription": 9, "head_seq": 0});
    let client = client_of(|s| tokio::spawn(kernel_that_answers_then_dies(s, answer))).await;
    let mut sub = client.watch(WatchParams::live(1)).await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(30), sub.next()).await;
    assert!(matches!(next, Ok(None)), "the subscription of a closed connection ends");
    assert!(client.is_closed());
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_made_after_the_close_fails_at_once() {
    let client = client_of(|s| tokio::spawn(kernel_that_answers_then_dies(s, json!({})))).await;
    let _: Value = client.call("session.list", json!({})).await.unwrap();
    client.closed().await;
    assert!(matches!(client.call("session.list", json!({})).await, Err(ClientError::Closed)));
    let mut pending = Pending::default();
    pending.close();
    let (tx, _rx) = oneshot::channel();
    assert!(!pending.insert(1, tx), "a closed table takes no more requests");
}

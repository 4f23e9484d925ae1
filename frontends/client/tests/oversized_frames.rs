//! A frame over the limit from the kernel ends only what it was for: the request it answers
//! fails, the subscription it feeds ends (and is unwatched in the kernel), and the log says
//! why; every other request and subscription on the shared connection goes on. The kernel
//! here is a fake on a real Unix socket, since a real one never sends such a frame.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use superpi_client::{ConnectOptions, KernelClient};
use superpi_proto::message::{KernelHello, Response, codes, encode_event_batch};
use superpi_proto::method::WatchParams;
use superpi_proto::{ClientMessage, Event, KernelMessage, Locations, frame};
use tokio::net::UnixListener;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

/// The log, as the client library writes it.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn oversized() -> String {
    "x".repeat(frame::DEFAULT_MAX_FRAME + 1)
}

fn event_json(conversation_id: i64, seq: u64, text: &str) -> String {
    let mut event = Event::notice(conversation_id, None, "info", text);
    event.seq = seq;
    event.to_wire().to_string()
}

/// A kernel that answers `hello`; `test.big` with an answer over the limit and anything else
/// with `{"ok": true}`; `session.watch` of conversation N with subscription N, then (for
/// conversation 1) an event batch over the limit followed by one that fits. It reports the
/// requests it read.
async fn fake_kernel(listener: UnixListener, seen: mpsc::UnboundedSender<(String, Value)>) {
    let (stream, _) = listener.accept().await.unwrap();
    let mut framed = Framed::new(stream, frame::codec(usize::MAX >> 1));
    let _hello = framed.next().await.unwrap().unwrap();
    let hello =
        KernelHello { protocol: superpi_proto::PROTOCOL_VERSION, version: "fake".into(), pid: 1, capabilities: vec![] };
    framed.send(Bytes::from(frame::encode(&KernelMessage::Hello(hello)))).await.unwrap();
    while let Some(Ok(body)) = framed.next().await {
        let Ok(ClientMessage::Request(request)) = frame::decode::<ClientMessage>(&body) else { continue };
        let _ = seen.send((request.method.clone(), request.params.clone()));
        let answer = match request.method.as_str() {
            "test.big" => json!({"text": oversized()}),
            "session.watch" => json!({"subscription": request.params["conversation_id"], "head_seq": 0}),
            _ => json!({"ok": true}),
        };
        let answer = KernelMessage::Response(Response::ok(request.id, answer));
        framed.send(Bytes::from(frame::encode(&answer))).await.unwrap();
        if request.method == "session.watch" && request.params["conversation_id"] == 1 {
            let first = event_json(1, 1, "before");
            framed.send(Bytes::from(encode_event_batch(1, [first.as_str()]))).await.unwrap();
            let big = event_json(1, 2, &oversized());
            framed.send(Bytes::from(encode_event_batch(1, [big.as_str()]))).await.unwrap();
            let after = event_json(1, 3, "after the gap");
            framed.send(Bytes::from(encode_event_batch(1, [after.as_str()]))).await.unwrap();
        }
        if request.method == "session.watch" && request.params["conversation_id"] == 2 {
            let other = event_json(2, 1, "for the other subscription");
            framed.send(Bytes::from(encode_event_batch(2, [other.as_str()]))).await.unwrap();
        }
    }
}

/// What `future` gives, failing the test (instead of hanging it) after 10 s.
async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(10), future).await.expect("no answer within 10 s")
}

fn watch_params(conversation_id: i64) -> WatchParams {
    WatchParams::live(conversation_id)
}

fn notice_text(event: &Event) -> String {
    event.to_wire()["message"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn an_oversized_frame_ends_only_the_request_or_subscription_it_was_for() {
    let log = Log::default();
    let subscriber = tracing_subscriber::fmt().with_writer({
        let log = log.clone();
        move || log.clone()
    });
    let _log = tracing::subscriber::set_default(subscriber.with_ansi(false).finish());

    let dir = tempfile::tempdir().unwrap();
    let locations = Locations::under(dir.path());
    std::fs::create_dir_all(&locations.runtime_dir).unwrap();
    let listener = UnixListener::bind(locations.socket_path()).unwrap();
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let kernel = tokio::spawn(fake_kernel(listener, seen_tx));
    let mut options = ConnectOptions::new(locations, "test");
    options.autostart = false;
    options.provider_env = None;
    let client = KernelClient::connect(&options).await.unwrap();

    // An answer over the limit fails its request, with the reason; the next one is answered.
    let big = within(client.call("test.big", json!({}))).await.unwrap_err();
    assert_eq!(big.code(), Some(codes::FRAME_TOO_LARGE), "{big}");
    assert!(big.to_string().contains("over the frame limit"), "{big}");
    assert_eq!(client.call("test.small", json!({})).await.unwrap(), json!({"ok": true}));

    // An event frame over the limit ends its subscription after what came before it, and
    // nothing after the gap is handed over; another subscription goes on.
    let mut first = client.watch(watch_params(1)).await.unwrap();
    let mut second = client.watch(watch_params(2)).await.unwrap();
    assert_eq!(notice_text(&within(first.next()).await.expect("the event before the gap")), "before");
    assert!(within(first.next()).await.is_none(), "the subscription ends at the oversized frame");
    let other = within(second.next()).await.expect("the other subscription's event");
    assert_eq!(notice_text(&other), "for the other subscription");
    assert_eq!(client.call("test.small", json!({})).await.unwrap(), json!({"ok": true}));
    assert!(!client.is_closed(), "the connection stays open");

    // The kernel was told to stop feeding the ended subscription.
    let mut unwatched = None;
    while let Ok((method, params)) = seen.try_recv() {
        if method == "session.unwatch" {
            unwatched = Some(params["subscription"].clone());
        }
    }
    assert_eq!(unwatched, Some(json!(1)));

    // The log says what was skipped and what it ended.
    let text = log.text();
    assert!(text.contains("that request fails"), "{text}");
    assert!(text.contains("subscription=1") && text.contains("that subscription ends"), "{text}");

    // A message of ours over the limit is refused before it is sent; the connection goes on.
    let refused = client.call("test.small", json!({"pad": oversized()})).await.unwrap_err();
    assert!(refused.to_string().contains("over the kernel's frame limit"), "{refused}");
    assert_eq!(client.call("test.small", json!({})).await.unwrap(), json!({"ok": true}));
    drop((first, second, client));
    kernel.abort();
}

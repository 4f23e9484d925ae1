//! Server-sent events: framing, and a response body fed by a channel.

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

/// The last frame of an OpenAI-style stream.
pub const SSE_DONE: &[u8] = b"data: [DONE]\n\n";

/// One `data:` event. JSON text has no raw newlines, so one `data:` line suffices; any
/// newline in `data` still starts a new `data:` line as the SSE format requires.
pub fn sse_data(data: &str) -> Bytes {
    let mut out = BytesMut::with_capacity(data.len() + 8);
    for line in data.split('\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\n");
    }
    out.extend_from_slice(b"\n");
    out.freeze()
}

/// The headers of an SSE response.
pub fn sse_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers
}

/// A body that sends what the channel yields, joining the frames already queued into one
/// write. The body ends when every sender is gone. Dropping the body (the client went away)
/// closes the channel, which the producer sees as `Sender::closed` or a failed send.
pub fn sse_body(rx: mpsc::Receiver<Bytes>) -> Body {
    let stream = futures::stream::unfold((rx, Vec::with_capacity(64)), |(mut rx, mut batch)| async move {
        if rx.recv_many(&mut batch, 256).await == 0 {
            return None;
        }
        let joined = if batch.len() == 1 {
            batch.pop().unwrap_or_default()
        } else {
            let mut out = BytesMut::with_capacity(batch.iter().map(Bytes::len).sum());
            for frame in batch.drain(..) {
                out.extend_from_slice(&frame);
            }
            out.freeze()
        };
        Some((Ok::<_, std::convert::Infallible>(joined), (rx, batch)))
    });
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_frames() {
        assert_eq!(sse_data("{\"a\":1}"), Bytes::from_static(b"data: {\"a\":1}\n\n"));
        assert_eq!(sse_data("a\nb"), Bytes::from_static(b"data: a\ndata: b\n\n"));
    }

    #[tokio::test]
    async fn body_joins_queued_frames_and_ends_with_the_senders() {
        let (tx, rx) = mpsc::channel(8);
        tx.send(sse_data("1")).await.unwrap();
        tx.send(sse_data("2")).await.unwrap();
        tx.send(Bytes::from_static(SSE_DONE)).await.unwrap();
        drop(tx);
        let body = sse_body(rx);
        let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
        assert_eq!(&bytes[..], b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n");
    }
}

//! Framing: a 4-byte big-endian length, then one UTF-8 JSON object. No socket loop here.

use bytes::{Buf, BytesMut};
use serde::{Serialize, de::DeserializeOwned};
use tokio_util::codec::{Decoder, LengthDelimitedCodec};

/// The default maximum frame size: 16 MiB.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// The codec for the kernel socket, refusing frames over `max_frame` bytes.
pub fn codec(max_frame: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder().length_field_length(4).big_endian().max_frame_length(max_frame).new_codec()
}

/// What [`FrameReader`] read: a frame's body, or the length and first bytes (at most
/// [`HEAD_BYTES`]) of a frame over the maximum, whose other bytes it skips (the length prefix
/// says where the next frame starts, so the connection goes on; the head says whose it was,
/// see [`owner`]).
#[derive(Debug, PartialEq)]
pub enum ReadFrame {
    Frame(BytesMut),
    TooLarge { len: usize, head: BytesMut },
}

/// How much of a refused frame is kept: enough for its tag and id, which writers put first.
pub const HEAD_BYTES: usize = 64;

/// Whom a frame is for, as its first bytes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameOwner {
    /// A request (client to kernel) of this id.
    Request(u64),
    /// The answer to the request of this id.
    Response(u64),
    /// An event batch of this subscription.
    Events(u64),
}

/// Whom a frame is for, from its head: the kernel and superpi-client write a message's tag
/// and then its id or subscription first (serde's order for `KernelMessage`, `ClientMessage`
/// and `encode_event_batch`). `None` for anything else: the reader of an oversized frame that
/// cannot be placed only logs it.
pub fn owner(head: &[u8]) -> Option<FrameOwner> {
    type Prefix = (&'static [u8], fn(u64) -> FrameOwner);
    let prefixes: [Prefix; 3] = [
        (b"{\"type\":\"request\",\"id\":", FrameOwner::Request),
        (b"{\"type\":\"response\",\"id\":", FrameOwner::Response),
        (b"{\"type\":\"event\",\"subscription\":", FrameOwner::Events),
    ];
    prefixes.iter().find_map(|(prefix, make)| {
        let rest = head.strip_prefix(*prefix)?;
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        // The number must end inside the head, or it may be cut.
        if digits == 0 || digits == rest.len() {
            return None;
        }
        std::str::from_utf8(&rest[..digits]).ok()?.parse().ok().map(make)
    })
}

/// The reading side of the framing, refusing frames over a maximum without buffering them and
/// without ending the stream: a peer that sent one oversized frame can go on.
#[derive(Debug)]
pub struct FrameReader {
    max_frame: usize,
    /// Bytes of a refused frame still to skip.
    skipping: usize,
}

impl FrameReader {
    pub fn new(max_frame: usize) -> FrameReader {
        FrameReader { max_frame, skipping: 0 }
    }
}

const HEADER: usize = 4;

impl Decoder for FrameReader {
    type Item = ReadFrame;
    type Error = std::io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<ReadFrame>, std::io::Error> {
        if self.skipping > 0 {
            let n = self.skipping.min(src.len());
            src.advance(n);
            self.skipping -= n;
            if self.skipping > 0 {
                return Ok(None);
            }
        }
        if src.len() < HEADER {
            return Ok(None);
        }
        let len = u32::from_be_bytes([src[0], src[1], src[2], src[3]]) as usize;
        if len > self.max_frame {
            // Its head first (a few bytes, whatever the frame's size), then the rest skipped.
            let head = len.min(HEAD_BYTES);
            if src.len() < HEADER + head {
                src.reserve(HEADER + head - src.len());
                return Ok(None);
            }
            src.advance(HEADER);
            let head = src.split_to(head);
            let n = (len - head.len()).min(src.len());
            src.advance(n);
            self.skipping = len - head.len() - n;
            return Ok(Some(ReadFrame::TooLarge { len, head }));
        }
        if src.len() < HEADER + len {
            src.reserve(HEADER + len - src.len());
            return Ok(None);
        }
        src.advance(HEADER);
        Ok(Some(ReadFrame::Frame(src.split_to(len))))
    }
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("frame is not a valid message: {0}")]
    NotAMessage(serde_json::Error),
}

/// Serializes a message into a frame body.
pub fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    serde_json::to_vec(message).unwrap_or_else(|_| b"{}".to_vec())
}

/// Reads a frame body as a message, telling a frame that is not JSON from JSON that is not
/// a message.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    match serde_json::from_slice::<T>(body) {
        Ok(message) => Ok(message),
        Err(err) if err.is_syntax() || err.is_eof() => Err(FrameError::NotJson(err)),
        // `IgnoredAny` would skip strings without checking their UTF-8: read a whole value.
        Err(err) => match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(_) => Err(FrameError::NotAMessage(err)),
            Err(syntax) => Err(FrameError::NotJson(syntax)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ClientMessage, Request};
    use bytes::BytesMut;
    use serde_json::json;
    use tokio_util::codec::{Decoder, Encoder};

    #[test]
    fn frames_round_trip_and_refuse_oversize() {
        let mut codec = codec(64);
        let mut buf = BytesMut::new();
        codec.encode(bytes::Bytes::from_static(b"{\"a\":1}"), &mut buf).unwrap();
        assert_eq!(&buf[..4], &[0, 0, 0, 7]);
        let frame = codec.decode(&mut buf).unwrap().unwrap();
        assert_eq!(&frame[..], b"{\"a\":1}");

        let mut big = BytesMut::new();
        big.extend_from_slice(&1000u32.to_be_bytes());
        big.extend_from_slice(&[b' '; 10]);
        assert!(codec.decode(&mut big).is_err());
    }

    #[test]
    fn the_reader_skips_an_oversized_frame_and_reads_the_next() {
        let mut reader = FrameReader::new(8);
        let mut buf = BytesMut::new();
        let len = HEAD_BYTES + 20;
        buf.extend_from_slice(&(len as u32).to_be_bytes());
        buf.extend_from_slice(&[b'x'; 5]);
        // Its head is awaited (a few bytes), never the whole frame.
        assert_eq!(reader.decode(&mut buf).unwrap(), None);
        buf.extend_from_slice(&[b'h'; HEAD_BYTES]);
        let head = BytesMut::from([&[b'x'; 5][..], &[b'h'; HEAD_BYTES - 5]].concat().as_slice());
        assert_eq!(reader.decode(&mut buf).unwrap(), Some(ReadFrame::TooLarge { len, head }));
        assert_eq!(reader.decode(&mut buf).unwrap(), None);
        // The rest of the refused frame arrives split, then a good frame.
        buf.extend_from_slice(&[b'x'; 10]);
        assert_eq!(reader.decode(&mut buf).unwrap(), None);
        buf.extend_from_slice(&[b'x'; 5]);
        buf.extend_from_slice(&2u32.to_be_bytes());
        buf.extend_from_slice(b"{}");
        assert_eq!(reader.decode(&mut buf).unwrap(), Some(ReadFrame::Frame(BytesMut::from(&b"{}"[..]))));
        assert!(buf.is_empty());
        assert_eq!(reader.decode(&mut buf).unwrap(), None);
    }

    #[test]
    fn the_owner_of_a_frame_is_read_from_its_head() {
        let request =
            encode(&ClientMessage::Request(Request { id: 41, method: "session.list".into(), params: json!({}) }));
        assert_eq!(owner(&request[..HEAD_BYTES.min(request.len())]), Some(FrameOwner::Request(41)));
        let response = encode(&crate::KernelMessage::Response(crate::message::Response::ok(7, json!({"x": 1}))));
        assert_eq!(owner(&response), Some(FrameOwner::Response(7)));
        let batch = crate::message::encode_event_batch(12345, ["{}"]);
        assert_eq!(owner(&batch[..HEAD_BYTES.min(batch.len())]), Some(FrameOwner::Events(12345)));
        // A number cut by the head's end, or anything else, is nobody's.
        assert_eq!(owner(b"{\"type\":\"response\",\"id\":123"), None);
        assert_eq!(owner(b"{\"id\":1,\"type\":\"response\"}"), None);
        assert_eq!(owner(b"   "), None);
    }

    #[test]
    fn decode_tells_syntax_from_shape() {
        assert!(matches!(decode::<ClientMessage>(b"not json"), Err(FrameError::NotJson(_))));
        assert!(matches!(decode::<ClientMessage>(b"{\"type\":\"nope\"}"), Err(FrameError::NotAMessage(_))));
        // Found by the frame fuzz target: invalid UTF-8 in a string is not JSON.
        assert!(matches!(decode::<ClientMessage>(b"{\"type\":\"nope\",\"k\":\"\xff\"}"), Err(FrameError::NotJson(_))));
        assert!(matches!(decode::<ClientMessage>(b"{\"type\":\"ack\",\"s\xffn\":3}"), Err(FrameError::NotJson(_))));
        let msg =
            ClientMessage::Request(Request { id: 7, method: "session.list".into(), params: serde_json::json!({}) });
        assert_eq!(decode::<ClientMessage>(&encode(&msg)).unwrap(), msg);
    }
}

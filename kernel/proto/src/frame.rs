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

/// What [`FrameReader`] read: a frame's body, or the length of a frame over the maximum,
/// whose bytes it skips (the length prefix says where the next frame starts, so the
/// connection goes on).
#[derive(Debug, PartialEq)]
pub enum ReadFrame {
    Frame(BytesMut),
    TooLarge { len: usize },
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
            src.advance(HEADER);
            let n = len.min(src.len());
            src.advance(n);
            self.skipping = len - n;
            return Ok(Some(ReadFrame::TooLarge { len }));
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
        buf.extend_from_slice(&20u32.to_be_bytes());
        buf.extend_from_slice(&[b'x'; 5]);
        assert_eq!(reader.decode(&mut buf).unwrap(), Some(ReadFrame::TooLarge { len: 20 }));
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

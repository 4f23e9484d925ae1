//! Framing: a 4-byte big-endian length, then one UTF-8 JSON object. No socket loop here.

use serde::{Serialize, de::DeserializeOwned};
use tokio_util::codec::LengthDelimitedCodec;

/// The default maximum frame size: 16 MiB.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// The codec for the kernel socket, refusing frames over `max_frame` bytes.
pub fn codec(max_frame: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder().length_field_length(4).big_endian().max_frame_length(max_frame).new_codec()
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

//! The kernel socket: the frame codec with the message decoder, and the event reader.

use bytes::BytesMut;
use superpi_proto::frame::{self, FrameError};
use superpi_proto::{ClientMessage, Event, KernelMessage};
use tokio_util::codec::Decoder;

/// A small limit so that the fuzzer reaches the oversize path.
const MAX_FRAME: usize = 4096;

/// Bytes as they arrive on the kernel socket: length-delimited frames, each read as a client
/// message and as a kernel message. A message that decodes encodes back to itself.
pub fn frame(data: &[u8]) {
    let mut codec = frame::codec(MAX_FRAME);
    let mut buf = BytesMut::from(data);
    // Stops at an incomplete frame or one over the limit (the connection ends there).
    while let Ok(Some(body)) = codec.decode(&mut buf) {
        assert!(body.len() <= MAX_FRAME, "a frame over the limit was read");
        round_trip::<ClientMessage>(&body);
        round_trip::<KernelMessage>(&body);
    }
}

fn round_trip<T>(body: &[u8])
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    match frame::decode::<T>(body) {
        Ok(message) => {
            let again = frame::decode::<T>(&frame::encode(&message));
            assert_eq!(again.ok().as_ref(), Some(&message), "a decoded message does not survive encoding");
        }
        Err(FrameError::NotJson(_)) => {
            assert!(serde_json::from_slice::<serde_json::Value>(body).is_err(), "JSON called not JSON");
        }
        Err(FrameError::NotAMessage(_)) => {
            assert!(serde_json::from_slice::<serde_json::Value>(body).is_ok(), "not JSON called JSON");
        }
    }
}

/// An event's wire text, as a frontend reads the kernel's events. An event that reads
/// writes back to text that reads as the same event.
pub fn event(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(event) = Event::from_json(text) {
        let again = Event::from_json(&event.to_json());
        assert_eq!(again.ok().as_ref(), Some(&event), "a read event does not survive writing");
    }
}

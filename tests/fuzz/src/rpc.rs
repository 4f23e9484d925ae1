//! `superpi rpc`: the JSON-RPC envelope and the bounded line reader.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use serde_json::Value;
use superpi_rpc::envelope::{self, Incoming, Item, codes};
use superpi_rpc::lines::{Line, LineReader};
use tokio::io::{AsyncRead, ReadBuf};

/// One request line. Every answer is one JSON line; a parse error is given exactly to what
/// is not JSON; an item's error keeps the id when the id was a valid one.
pub fn envelope(data: &[u8]) {
    let is_json = serde_json::from_slice::<Value>(data).is_ok();
    match envelope::parse_line(data) {
        Incoming::Reject(error) => {
            let expected = if is_json { codes::INVALID_REQUEST } else { codes::PARSE_ERROR };
            assert_eq!(error.code, expected, "wrong error for a rejected line");
            answer(&envelope::reject(&error));
        }
        Incoming::Single(item) => {
            assert!(is_json);
            check_item(&item);
        }
        Incoming::Batch(items) => {
            assert!(is_json && !items.is_empty());
            items.iter().for_each(check_item);
        }
    }
}

fn check_item(item: &Item) {
    match item {
        Item::Call(call) => {
            assert!(matches!(call.params, None | Some(Value::Object(_) | Value::Array(_))));
            if let Some(id) = &call.id {
                assert!(matches!(id, Value::String(_) | Value::Number(_) | Value::Null));
                answer(&envelope::response(id, &Ok(Value::Null)));
            }
        }
        Item::Invalid { id, error } => {
            assert_eq!(error.code, codes::INVALID_REQUEST);
            answer(&envelope::response(id, &Err(error.clone())));
        }
    }
}

/// An answer goes out as exactly one line of JSON.
fn answer(value: &Value) {
    let line = envelope::to_line(value);
    assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "an answer is not one line");
    let back: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
    assert_eq!(&back, value, "an answer line does not read back");
}

/// The line reader, fed the input in chunks whose sizes come from the input itself. The first
/// byte is the limit (1..=64), the second the chunk size; what it reads must equal what the
/// whole input says, however it was split.
pub fn lines(data: &[u8]) {
    let [max, chunk, input @ ..] = data else { return };
    let max = usize::from(*max % 64) + 1;
    let chunk = usize::from(*chunk % 17) + 1;
    let got = read_all(Chunked { data: input, chunk }, max);
    assert_eq!(got, expected_lines(input, max), "limit {max}, chunks of {chunk}");
}

/// The lines of `input` as the reader's contract states them: split at LF, one trailing CR
/// dropped, blank lines skipped, a line over `max` reported as too long.
fn expected_lines(input: &[u8], max: usize) -> Vec<Line> {
    let mut out = Vec::new();
    for line in input.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > max {
            out.push(Line::TooLong { limit: max });
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            out.push(Line::Line(line.to_vec()));
        }
    }
    out.push(Line::Eof);
    out
}

fn read_all(source: Chunked<'_>, max: usize) -> Vec<Line> {
    let mut reader = LineReader::new(source, max);
    let mut out = Vec::new();
    // An in-memory source is always ready, so each `next` completes on its first poll.
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        let next = std::pin::pin!(reader.next());
        let Poll::Ready(line) = next.poll(&mut cx) else { panic!("an in-memory read did not complete") };
        let line = line.unwrap_or(Line::Eof);
        let eof = line == Line::Eof;
        out.push(line);
        if eof || out.len() > 100_000 {
            return out;
        }
    }
}

/// A reader that gives at most `chunk` bytes per read.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let n = self.chunk.min(self.data.len()).min(buf.remaining());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Poll::Ready(Ok(()))
    }
}

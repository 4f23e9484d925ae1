//! The bounded line reader that `superpi rpc` and `superpi acp` read their clients with.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use superpi_client::lines::{Line, LineReader};
use tokio::io::{AsyncRead, ReadBuf};

/// The line reader, fed the input in chunks whose sizes come from the input itself. The first
/// byte is the limit (1..=64), the second the chunk size; what it reads must equal what the
/// whole input says, however it was split.
pub fn read(data: &[u8]) {
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

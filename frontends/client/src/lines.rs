//! Newline-delimited framing with a size limit, for the frontends that read lines (the RPC
//! server, the ACP agent, the MCP server's stdio): a line over the limit is reported once and skipped up to its
//! newline, and reading goes on with the next line.

use tokio::io::{AsyncRead, AsyncReadExt};

/// What the next read gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// One line, without its newline (and without a trailing `\r`). Never blank.
    Line(Vec<u8>),
    /// A line passed the limit; its rest is skipped.
    TooLong {
        limit: usize,
    },
    Eof,
}

pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no newline.
    scanned: usize,
    max: usize,
    /// Skipping the rest of a line that was too long.
    discarding: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        LineReader { inner, buf: Vec::with_capacity(8192), scanned: 0, max: max.max(1), discarding: false }
    }

    /// The longest line passed on.
    pub fn limit(&self) -> usize {
        self.max
    }

    /// Sets the longest line passed on (at least one byte).
    pub fn set_limit(&mut self, max: usize) {
        self.max = max.max(1);
    }

    /// The next line. Cancel-safe: what was read stays buffered for the next call.
    pub async fn next(&mut self) -> std::io::Result<Line> {
        loop {
            if let Some(pos) = self.buf[self.scanned..].iter().position(|b| *b == b'\n') {
                let end = self.scanned + pos;
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                self.scanned = 0;
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if std::mem::take(&mut self.discarding) {
                    continue;
                }
                if line.len() > self.max {
                    return Ok(Line::TooLong { limit: self.max });
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(Line::Line(line));
            }
            self.scanned = self.buf.len();
            // A CR may still be followed by its LF: it does not count against the limit.
            let pending_cr = usize::from(self.buf.last() == Some(&b'\r'));
            if self.buf.len() > self.max + pending_cr {
                self.buf.clear();
                self.scanned = 0;
                if !self.discarding {
                    self.discarding = true;
                    return Ok(Line::TooLong { limit: self.max });
                }
            }
            self.buf.reserve(8192);
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                // The last line may lack its newline.
                let mut rest = std::mem::take(&mut self.buf);
                self.scanned = 0;
                if rest.last() == Some(&b'\r') {
                    rest.pop();
                }
                if std::mem::take(&mut self.discarding) || rest.iter().all(u8::is_ascii_whitespace) {
                    return Ok(Line::Eof);
                }
                if rest.len() > self.max {
                    return Ok(Line::TooLong { limit: self.max });
                }
                return Ok(Line::Line(rest));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn all(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        loop {
            let line = reader.next().await.unwrap();
            let eof = line == Line::Eof;
            out.push(line);
            if eof {
                return out;
            }
        }
    }

    fn l(s: &str) -> Line {
        Line::Line(s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        assert_eq!(all(b"a\nbb\r\n\n  \nccc", 10).await, vec![l("a"), l("bb"), l("ccc"), Line::Eof]);
        assert_eq!(all(b"", 10).await, vec![Line::Eof]);
    }

    #[tokio::test]
    async fn a_long_line_is_reported_once_and_reading_goes_on() {
        let long = "x".repeat(50_000);
        let input = format!("a\n{long}\nb\n{}\nc", "y".repeat(11));
        let lines = all(input.as_bytes(), 10).await;
        assert_eq!(
            lines,
            vec![l("a"), Line::TooLong { limit: 10 }, l("b"), Line::TooLong { limit: 10 }, l("c"), Line::Eof]
        );
        // Exactly at the limit is fine.
        assert_eq!(all(b"0123456789\n", 10).await, vec![l("0123456789"), Line::Eof]);
    }

    #[tokio::test]
    async fn the_limit_can_be_changed_before_reading() {
        let mut reader = LineReader::new(&b"0123456789\n"[..], 100);
        assert_eq!(reader.limit(), 100);
        reader.set_limit(0);
        assert_eq!(reader.limit(), 1, "a line of one byte always passes");
        reader.set_limit(5);
        assert_eq!(reader.next().await.unwrap(), Line::TooLong { limit: 5 });
        assert_eq!(reader.next().await.unwrap(), Line::Eof);
    }

    /// Found by the rpc_lines fuzz target: a CRLF split between reads made a line at the
    /// limit too long, and the last line kept its CR.
    #[tokio::test]
    async fn a_crlf_at_the_limit_and_a_cr_at_the_end_are_line_ends() {
        // The pipe holds 11 bytes: the first read ends right after the CR.
        let (mut tx, rx) = tokio::io::duplex(11);
        let writer = tokio::spawn(async move {
            tx.write_all(b"0123456789\r\nabc\r").await.unwrap();
        });
        let mut reader = LineReader::new(rx, 10);
        assert_eq!(reader.next().await.unwrap(), l("0123456789"));
        writer.await.unwrap();
        assert_eq!(reader.next().await.unwrap(), l("abc"));
        assert_eq!(reader.next().await.unwrap(), Line::Eof);
    }

    #[tokio::test]
    async fn lines_split_across_reads_join_up() {
        let (mut tx, rx) = tokio::io::duplex(4);
        let writer = tokio::spawn(async move {
            tx.write_all(b"{\"a\":").await.unwrap();
            tx.write_all(b"1}\n{\"b\":2}\n").await.unwrap();
        });
        let mut reader = LineReader::new(rx, 100);
        assert_eq!(reader.next().await.unwrap(), l("{\"a\":1}"));
        assert_eq!(reader.next().await.unwrap(), l("{\"b\":2}"));
        writer.await.unwrap();
        assert_eq!(reader.next().await.unwrap(), Line::Eof);
    }
}

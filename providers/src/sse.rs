//! An incremental server-sent-events decoder: bytes in, split anywhere; events out.
//!
//! Follows the HTML event-stream rules that the model APIs use: lines end in LF, CRLF or CR;
//! `event:` names the event, `data:` lines join with LF, a blank line dispatches, `:` starts a
//! comment, one space after the colon is dropped. `id:` and `retry:` are read and ignored.

/// One dispatched event. `event` is empty for the default `message` type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// The most bytes one line may take (a guard against a server that never sends a newline).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    /// The last byte consumed was a CR: an LF right after it belongs to the same line end.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

/// A line longer than [`MAX_LINE_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an event-stream line is longer than {MAX_LINE_BYTES} bytes")]
pub struct LineTooLong;

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk; complete events are appended to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), LineTooLong> {
        if self.after_cr && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        self.after_cr = false;
        if chunk.is_empty() {
            return Ok(());
        }
        // Lines wholly inside `chunk` are read in place; only a trailing partial line is kept.
        let mut rest = chunk;
        if !self.buf.is_empty() {
            match rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(end) => {
                    self.buf.extend_from_slice(&rest[..end]);
                    let line = std::mem::take(&mut self.buf);
                    self.line(&line, out);
                    rest = self.skip_line_end(rest, end);
                }
                None => {
                    self.buf.extend_from_slice(rest);
                    return self.check_len();
                }
            }
        }
        while !rest.is_empty() {
            match rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(end) => {
                    self.line(&rest[..end], out);
                    rest = self.skip_line_end(rest, end);
                }
                None => {
                    self.buf.extend_from_slice(rest);
                    break;
                }
            }
        }
        self.check_len()
    }

    fn check_len(&self) -> Result<(), LineTooLong> {
        if self.buf.len() > MAX_LINE_BYTES { Err(LineTooLong) } else { Ok(()) }
    }

    /// The rest after the line end at `end` (CR, LF or CRLF).
    fn skip_line_end<'a>(&mut self, rest: &'a [u8], end: usize) -> &'a [u8] {
        if rest[end] == b'\r' {
            match rest.get(end + 1) {
                Some(b'\n') => &rest[end + 2..],
                Some(_) => &rest[end + 1..],
                None => {
                    self.after_cr = true;
                    &rest[end + 1..]
                }
            }
        } else {
            &rest[end + 1..]
        }
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(&String::from_utf8_lossy(value));
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent { event: std::mem::take(&mut self.event), data: std::mem::take(&mut self.data) });
        } else {
            self.event.clear();
        }
        self.has_data = false;
    }

    /// The stream ended. A last event whose lines are complete but lack the blank line is still
    /// dispatched; a line cut mid-way is dropped with its event (it cannot be whole).
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.buf.is_empty() {
            self.buf.clear();
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        self.dispatch(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            decoder.feed(chunk, &mut out).unwrap();
        }
        decoder.finish(&mut out);
        out
    }

    #[test]
    fn decodes_events_split_anywhere() {
        let input =
            b": comment\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\ndata: {\"x\":1}\n\nid: 3\rdata: cr\r\rdata: last\n";
        let expected = vec![
            SseEvent { event: "a".into(), data: "one\ntwo".into() },
            SseEvent { event: String::new(), data: "{\"x\":1}".into() },
            SseEvent { event: String::new(), data: "cr".into() },
            SseEvent { event: String::new(), data: "last".into() },
        ];
        for piece in 1..input.len() + 1 {
            assert_eq!(decode_in_pieces(input, piece), expected, "piece size {piece}");
        }
    }

    #[test]
    fn multibyte_characters_survive_splits() {
        let input = "data: héllo wörld ✓\n\n".as_bytes();
        for piece in 1..input.len() {
            assert_eq!(decode_in_pieces(input, piece)[0].data, "héllo wörld ✓");
        }
    }

    #[test]
    fn a_line_cut_at_the_end_is_dropped() {
        assert_eq!(
            decode_in_pieces(b"data: one\n\ndata: {\"cut", 3),
            vec![SseEvent { event: String::new(), data: "one".into() }]
        );
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        assert!(decode_in_pieces(b"event: ping\n\n", 4).is_empty());
    }
}

//! Newline-delimited JSON from a byte stream that arrives in pieces of any size.

/// The longest line kept; a longer one is dropped whole and reported once.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// What one piece of input completed.
#[derive(Debug, PartialEq)]
pub enum Line {
    Json(serde_json::Value),
    /// A line that is not JSON (a program's stray print), kept for the notice.
    Text(String),
    TooLong(usize),
}

/// Splits bytes into lines, whatever the boundaries of the pieces.
#[derive(Debug, Default)]
pub struct Lines {
    buf: Vec<u8>,
    /// Bytes of an over-long line being skipped.
    skipping: Option<usize>,
}

impl Lines {
    pub fn push(&mut self, mut bytes: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        while let Some(end) = bytes.iter().position(|b| *b == b'\n') {
            let (head, rest) = bytes.split_at(end);
            bytes = &rest[1..];
            if let Some(skipped) = self.skipping.take() {
                out.push(Line::TooLong(skipped + head.len()));
                continue;
            }
            self.buf.extend_from_slice(head);
            let line = std::mem::take(&mut self.buf);
            out.extend(parse(&line));
        }
        match &mut self.skipping {
            Some(skipped) => *skipped += bytes.len(),
            None => {
                self.buf.extend_from_slice(bytes);
                if self.buf.len() > MAX_LINE {
                    self.skipping = Some(self.buf.len());
                    self.buf = Vec::new();
                }
            }
        }
        out
    }

    /// The last line when the stream ended without a newline.
    pub fn finish(&mut self) -> Vec<Line> {
        if let Some(skipped) = self.skipping.take() {
            return vec![Line::TooLong(skipped)];
        }
        let line = std::mem::take(&mut self.buf);
        parse(&line).into_iter().collect()
    }
}

fn parse(line: &[u8]) -> Option<Line> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(match serde_json::from_slice(line) {
        Ok(value) => Line::Json(value),
        Err(_) => Line::Text(String::from_utf8_lossy(line).into_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_survive_any_split_and_bad_lines_are_kept_apart() {
        let input = b"{\"a\":1}\r\nnot json\n\n{\"b\":[2]}";
        for cut in 0..=input.len() {
            let mut lines = Lines::default();
            let mut out = lines.push(&input[..cut]);
            out.extend(lines.push(&input[cut..]));
            out.extend(lines.finish());
            assert_eq!(
                out,
                vec![
                    Line::Json(serde_json::json!({"a": 1})),
                    Line::Text("not json".into()),
                    Line::Json(serde_json::json!({"b": [2]}))
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn an_over_long_line_is_dropped_and_reading_goes_on() {
        let mut lines = Lines::default();
        let big = vec![b'x'; MAX_LINE + 10];
        assert!(lines.push(&big).is_empty());
        assert_eq!(lines.push(b"yy\n{}\n"), vec![Line::TooLong(MAX_LINE + 12), Line::Json(serde_json::json!({}))]);
    }
}

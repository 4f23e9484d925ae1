//! Newline-delimited JSON from a byte stream that arrives in pieces of any size, and the
//! translator shape every line-speaking backend shares: lines in, [`BackendEvent`]s out, the
//! program's stray prints and over-long lines turned into notices.

use serde_json::Value;

use crate::event::BackendEvent;

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

/// What one backend makes of each JSON line its program prints.
pub trait LineTranslator: Default {
    /// The program's name in notices.
    const PROGRAM: &'static str;
    fn line(&mut self, line: &Value, out: &mut Vec<BackendEvent>);
    /// Whether the program said its turn ended (a program that exits before is a crash).
    fn ended(&self) -> bool;
    /// A question the program asked beside its output (Gemini CLI's hook, see `gemini_ask`),
    /// `id` the answer's address.
    fn ask(&mut self, id: String, request: &Value, out: &mut Vec<BackendEvent>) {
        let _ = (id, request, out);
    }
}

/// A translator of a program's stdout, whatever the backend.
pub trait Translate: Send {
    fn push(&mut self, bytes: &[u8]) -> Vec<BackendEvent>;
    /// The end of the output.
    fn finish(&mut self) -> Vec<BackendEvent>;
    fn ended(&self) -> bool;
    /// A question asked beside the output (see [`LineTranslator::ask`]).
    fn ask(&mut self, id: String, request: &Value) -> Vec<BackendEvent>;
}

/// A [`LineTranslator`] fed from bytes in pieces of any size.
#[derive(Debug, Default)]
pub struct Translating<T> {
    lines: Lines,
    inner: T,
}

impl<T: LineTranslator + Send> Translate for Translating<T> {
    fn push(&mut self, bytes: &[u8]) -> Vec<BackendEvent> {
        let lines = self.lines.push(bytes);
        self.translate(lines)
    }

    fn finish(&mut self) -> Vec<BackendEvent> {
        let lines = self.lines.finish();
        self.translate(lines)
    }

    fn ended(&self) -> bool {
        self.inner.ended()
    }

    fn ask(&mut self, id: String, request: &Value) -> Vec<BackendEvent> {
        let mut out = Vec::new();
        self.inner.ask(id, request, &mut out);
        out
    }
}

impl<T: LineTranslator> Translating<T> {
    /// A translator whose per-backend state starts as `inner`.
    pub fn with(inner: T) -> Self {
        Translating { lines: Lines::default(), inner }
    }

    fn translate(&mut self, lines: Vec<Line>) -> Vec<BackendEvent> {
        let mut out = Vec::new();
        for line in lines {
            match line {
                Line::Json(value) => self.inner.line(&value, &mut out),
                Line::Text(text) => out.push(BackendEvent::Notice {
                    level: "info",
                    message: format!("{}: {}", T::PROGRAM, text.chars().take(500).collect::<String>()),
                }),
                Line::TooLong(bytes) => out.push(BackendEvent::Notice {
                    level: "warning",
                    message: format!("{} wrote a line of {bytes} bytes; it was skipped", T::PROGRAM),
                }),
            }
        }
        out
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

/// Test helpers every translator's tests share.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A stream recorded from the real program (`tests/recorded/NAME`).
    pub fn recorded(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recorded").join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The events of `pieces` fed one after another, then the end.
    pub fn translate<T: LineTranslator + Send>(pieces: &[&[u8]]) -> Vec<BackendEvent> {
        let mut t = Translating::<T>::default();
        let mut out: Vec<BackendEvent> = pieces.iter().flat_map(|p| t.push(p)).collect();
        out.extend(t.finish());
        out
    }

    /// The events of `bytes`, checked to be the same whatever the byte it is split at.
    pub fn same_at_every_split<T: LineTranslator + Send>(bytes: &[u8]) -> Vec<BackendEvent> {
        let whole = translate::<T>(&[bytes]);
        for cut in 0..=bytes.len() {
            assert_eq!(translate::<T>(&[&bytes[..cut], &bytes[cut..]]), whole, "split at byte {cut}");
        }
        whole
    }
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

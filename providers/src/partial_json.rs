//! A tool call's arguments as they stream: the JSON text so far, completed into a value.
//!
//! Models stream a call's arguments as JSON text in pieces. [`complete`] reads a prefix of that
//! text and returns the value it holds so far: open objects and arrays are closed, a string
//! value cut short is kept as far as it goes (so an editor can show a file's content as it is
//! written), and what cannot be finished yet (a key, a number or `true` cut short, a dangling
//! `,` or `:`) is left out. Written here rather than taken from a crate: the one well-kept
//! partial parser (jiter) brings about ten crates and a value type of its own for these few
//! lines of bookkeeping.

use serde_json::Value;

/// What the innermost open object expects next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    Key,
    Colon,
    Value,
    CommaOrEnd,
}

/// The value the JSON text `prefix` holds so far, or `None` when it holds none yet (or is not
/// the start of JSON).
pub fn complete(prefix: &str) -> Option<Value> {
    let bytes = prefix.as_bytes();
    // Open containers, innermost last: `Some(next)` for an object, `None` for an array.
    let mut open: Vec<Option<Next>> = Vec::new();
    // The longest prefix that closing the open containers makes whole.
    let mut whole: Option<String> = None;
    let checkpoint = |end: usize, open: &[Option<Next>]| {
        let mut text = prefix[..end].to_string();
        text.extend(open.iter().rev().map(|c| if c.is_some() { '}' } else { ']' }));
        Some(text)
    };
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' | b'[' => {
                open.push((bytes[i] == b'{').then_some(Next::Key));
                i += 1;
                whole = checkpoint(i, &open);
            }
            b'}' | b']' => {
                open.pop()?;
                value_done(&mut open);
                i += 1;
                whole = checkpoint(i, &open);
            }
            b',' => {
                if let Some(Some(next)) = open.last_mut() {
                    *next = Next::Key;
                }
                i += 1;
            }
            b':' => {
                if let Some(Some(next)) = open.last_mut() {
                    *next = Next::Value;
                }
                i += 1;
            }
            b'"' => {
                let is_key = matches!(open.last(), Some(Some(Next::Key)));
                match string_end(bytes, i + 1) {
                    Ok(end) => {
                        i = end + 1;
                        if is_key {
                            if let Some(Some(next)) = open.last_mut() {
                                *next = Next::Colon;
                            }
                        } else {
                            value_done(&mut open);
                            whole = checkpoint(i, &open);
                        }
                    }
                    // A value cut short inside its text: kept as far as it is whole.
                    Err(kept) if !is_key => {
                        let mut text = prefix[..kept].to_string();
                        text.push('"');
                        text.extend(open.iter().rev().map(|c| if c.is_some() { '}' } else { ']' }));
                        whole = Some(text);
                        break;
                    }
                    Err(_) => break,
                }
            }
            _ => {
                // A number or a literal: whole only once something follows it.
                let end = bytes[i..]
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r'))
                    .map(|n| i + n);
                let Some(end) = end else { break };
                i = end;
                value_done(&mut open);
                whole = checkpoint(i, &open);
            }
        }
    }
    serde_json::from_str(&whole?).ok()
}

/// After a value: the object around it expects a comma or its end.
fn value_done(open: &mut [Option<Next>]) {
    if let Some(Some(next)) = open.last_mut() {
        *next = Next::CommaOrEnd;
    }
}

/// The index of the quote that ends the string whose text starts at `start`, or, when the
/// text ends first, `Err` with the length of the part that is whole (an escape cut short is
/// left out).
fn string_end(bytes: &[u8], start: usize) -> Result<usize, usize> {
    let mut j = start;
    while j < bytes.len() {
        match bytes[j] {
            b'"' => return Ok(j),
            b'\\' => {
                let len = match bytes.get(j + 1) {
                    // A high surrogate is whole only with the low one after it.
                    Some(b'u') if is_high_surrogate(bytes.get(j + 2..j + 6)) => 12,
                    Some(b'u') => 6,
                    _ => 2,
                };
                if j + len > bytes.len() {
                    return Err(j);
                }
                j += len;
            }
            _ => j += 1,
        }
    }
    Err(bytes.len())
}

fn is_high_surrogate(hex: Option<&[u8]>) -> bool {
    let code = hex.and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u16::from_str_radix(h, 16).ok());
    code.is_some_and(|c| (0xD800..=0xDBFF).contains(&c))
}

#[cfg(test)]
#[path = "partial_json_tests.rs"]
mod tests;

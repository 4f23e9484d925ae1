//! A conversation's deltas (streamed text, thinking) as the kernel that runs it tells the other
//! kernels' watchers, through PostgreSQL's NOTIFY on the `superpi` channel. Deltas are never
//! stored; a notification's payload must stay under 8000 bytes, so a batch of deltas is said in
//! as few notifications as fit (`live CONV` then a line `SEQ JSON` per event; an event's wire
//! JSON holds no raw newline), and an event too large for one in parts (`part CONV SEQ I N`
//! then a slice of its line), which a listener puts together again. One kernel sends a
//! conversation's notifications in seq order, each batch before the commit that follows it
//! (`Commit::live`), and PostgreSQL delivers them in commit order, so the parts of an event
//! arrive one after the other.

use std::collections::HashMap;

/// Deltas of one conversation, in seq order, as wire JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBatch {
    pub conversation_id: i64,
    pub events: Vec<(u64, String)>,
}

/// What one notification's payload holds at most, with room to spare under PostgreSQL's 8000.
const PAYLOAD: usize = 7900;

/// An event larger than this (its wire JSON) is not put together again: its parts are dropped.
const MOST_EVENT: usize = 16 * 1024 * 1024;

/// The payloads that say these deltas, in order.
pub(crate) fn payloads(conversation_id: i64, events: &[(u64, String)]) -> Vec<String> {
    let head = format!("live {conversation_id}");
    let mut out = Vec::new();
    let mut current = head.clone();
    for (seq, json) in events {
        let line = format!("\n{seq} {json}");
        if current.len() + line.len() <= PAYLOAD {
            current.push_str(&line);
            continue;
        }
        if current.len() > head.len() {
            out.push(std::mem::replace(&mut current, head.clone()));
        }
        if head.len() + line.len() <= PAYLOAD {
            current.push_str(&line);
        } else {
            out.extend(parts(conversation_id, *seq, &line[1..]));
        }
    }
    if current.len() > head.len() {
        out.push(current);
    }
    out
}

/// One event's line in parts, each cut at a character boundary.
fn parts(conversation_id: i64, seq: u64, line: &str) -> Vec<String> {
    let room = PAYLOAD - 64;
    let mut slices = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        let mut cut = room.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (slice, after) = rest.split_at(cut);
        slices.push(slice);
        rest = after;
    }
    let count = slices.len();
    slices.iter().enumerate().map(|(i, slice)| format!("part {conversation_id} {seq} {i} {count}\n{slice}")).collect()
}

/// Whether a payload is one of these (else it is a `Notice`'s).
pub(crate) fn is_live(payload: &str) -> bool {
    payload.starts_with("live ") || payload.starts_with("part ")
}

/// A listener's parts of events still arriving, one event per conversation at a time.
#[derive(Default)]
pub(crate) struct Assembler {
    partial: HashMap<i64, Partial>,
}

struct Partial {
    seq: u64,
    next: usize,
    line: String,
}

impl Assembler {
    /// The deltas a payload completes: a whole batch, or an event whose last part this is.
    /// What does not read is dropped (deltas are a view; the completed messages are stored).
    pub fn heard(&mut self, payload: &str) -> Option<LiveBatch> {
        let (head, body) = payload.split_once('\n')?;
        let mut words = head.split(' ');
        let kind = words.next()?;
        let conversation_id: i64 = words.next()?.parse().ok()?;
        if kind == "live" {
            let events = body.split('\n').filter_map(line).collect::<Vec<_>>();
            return (!events.is_empty()).then_some(LiveBatch { conversation_id, events });
        }
        let seq: u64 = words.next()?.parse().ok()?;
        let index: usize = words.next()?.parse().ok()?;
        let count: usize = words.next()?.parse().ok()?;
        if index == 0 {
            self.partial.insert(conversation_id, Partial { seq, next: 0, line: String::new() });
        }
        let partial = self.partial.get_mut(&conversation_id)?;
        if partial.seq != seq || partial.next != index || partial.line.len() + body.len() > MOST_EVENT {
            self.partial.remove(&conversation_id);
            return None;
        }
        partial.line.push_str(body);
        partial.next += 1;
        if partial.next < count {
            return None;
        }
        let whole = self.partial.remove(&conversation_id)?;
        let event = line(&whole.line)?;
        Some(LiveBatch { conversation_id, events: vec![event] })
    }
}

/// `SEQ JSON`, read.
fn line(line: &str) -> Option<(u64, String)> {
    let (seq, json) = line.split_once(' ')?;
    Some((seq.parse().ok()?, json.to_string()))
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;

//! Whether a backend turn continues the backend's own session or starts a new one seeded with
//! superpi's history. A backend (Claude Code, Codex, Gemini CLI, OpenCode) keeps its session
//! and transcript on the machine that ran it (`DATA_DIR/backends/ID`), and superpi keeps the
//! session's id there with the seq of the last history entry it saw. When the kernel running a
//! turn has no session of the conversation (its earlier turns ran through another kernel on
//! the shared database, on another machine), or its session missed entries (turns that ran
//! elsewhere since, a clear, a compaction), the backend starts a new session and the prompt
//! carries the conversation's context from the store first (the context rules: after the last
//! compaction, its summary first), bounded; the turn gets a notice saying so. Pure functions:
//! `backend_turn.rs` reads the store and the session.

use superpi_backends::SessionRecord;
use superpi_proto::{ContentBlock, Entry, EntryKind};

/// At most this much history is given to a new session (the latest of it).
const MOST_HISTORY: usize = 64 * 1024;
/// A tool call's arguments or result is quoted up to this many characters.
const QUOTE: usize = 2000;

/// How a turn's backend session begins.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// The session kept here saw everything before this turn.
    Resume(String),
    /// A new session, with nothing before it.
    Fresh,
    /// A new session, given this history before the prompt; `why` names what was missing.
    Seeded { history: String, why: &'static str },
}

/// Chooses, from the session kept here and the conversation's entries (this turn's prompt among
/// them, under `turn_id`).
pub(crate) fn start(kept: Option<SessionRecord>, entries: &[Entry], turn_id: i64) -> Start {
    let before: Vec<&Entry> = entries.iter().filter(|e| e.turn_id != Some(turn_id)).collect();
    let last_seen = before.iter().map(|e| e.seq).max();
    let why = match kept {
        Some(kept) if kept.through_seq.is_none() || kept.through_seq == last_seen => return Start::Resume(kept.id),
        Some(_) => {
            "its session on this machine missed what the conversation did since (turns through another \
                    kernel, a clear or a compaction)"
        }
        None => {
            "this machine has no session of the conversation (its earlier turns ran through another kernel, \
                 or the session was not kept)"
        }
    };
    let history = history(&before);
    if history.is_empty() { Start::Fresh } else { Start::Seeded { history, why } }
}

/// The prompt a seeded session gets: the history, then the person's words.
pub(crate) fn seeded_prompt(history: &str, prompt: &str) -> String {
    format!(
        "[The conversation so far, from superpi's history: your earlier session of it is not on this machine.]\n\
         {history}\n[End of the conversation so far. The new message follows.]\n\n{prompt}"
    )
}

/// The context the entries give by the compaction rules, as text: the latest [`MOST_HISTORY`].
fn history(entries: &[&Entry]) -> String {
    let from = entries.iter().rposition(|e| e.kind == EntryKind::Compaction).unwrap_or(0);
    let mut lines: Vec<String> = Vec::new();
    for entry in &entries[from..] {
        let text = entry.message.text();
        match entry.kind {
            // A clear keeps nothing; a compaction's summary stands for what came before it.
            EntryKind::Compaction if text.trim().is_empty() => lines.clear(),
            EntryKind::Compaction => lines.push(format!("Summary of what came before: {text}")),
            EntryKind::User => lines.push(format!("User: {}", said(&entry.message.content))),
            EntryKind::Assistant => {
                let words = said(&entry.message.content);
                if !words.is_empty() {
                    lines.push(format!("Assistant: {words}"));
                }
                for block in &entry.message.content {
                    if let ContentBlock::ToolCall { name, arguments, .. } = block {
                        lines.push(format!("Assistant called {name}: {}", quote(&arguments.to_string())));
                    }
                }
            }
            EntryKind::ToolResult => {
                for block in &entry.message.content {
                    if let ContentBlock::ToolResult { name, output, is_error, .. } = block {
                        let verb = if *is_error { "failed" } else { "returned" };
                        lines.push(format!("{name} {verb}: {}", quote(output)));
                    }
                }
            }
            EntryKind::System => {}
        }
    }
    let mut kept = 0;
    let start = lines
        .iter()
        .rposition(|line| {
            kept += line.len() + 1;
            kept > MOST_HISTORY
        })
        .map_or(0, |i| i + 1);
    let mut out = if start > 0 { vec!["[earlier history left out]".to_string()] } else { Vec::new() };
    out.extend_from_slice(&lines[start..]);
    out.join("\n")
}

/// A message's words (images said as such).
fn said(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in content {
        match block {
            ContentBlock::Text { text } => out.push_str(text),
            ContentBlock::Image { media_type, .. } => out.push_str(&format!("[image {media_type}]")),
            _ => {}
        }
    }
    out
}

fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
#[path = "backend_seed_tests.rs"]
mod tests;

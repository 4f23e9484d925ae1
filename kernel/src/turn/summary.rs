//! The summary a compaction stores, asked of the model in requests that each fit its window.
//!
//! The part to summarise (the previous summary and the entries before the cut) may be larger
//! than the window: a conversation that grew past a window superpi did not know, or a manual
//! compaction of a long history. It is then summarised in pieces, oldest first: each request
//! holds the summary so far (the previous compaction's, then the last piece's), as many whole
//! turns as fit and the instruction, so nothing is left out; a part that does not fit alone (one
//! huge tool result) goes clipped, its head and tail kept. Past [`MAX_PIECES`] the oldest
//! pieces are left out rather than asked for one by one.

use futures::StreamExt;
use serde_json::Value;
use superpi_proto::{ContentBlock, Entry, Message, Role, Usage};
use superpi_providers::{ModelRequest, ProviderError, SharedProvider, StreamEvent, tokens};
use tokio_util::sync::CancellationToken;

use crate::turn::context::{self, Frame};

/// What the model is asked, after the part to summarise.
pub(crate) const SUMMARY_PROMPT: &str = "Summarise the conversation so far for yourself, so that you can go on with \
the work without it: the user's requests and intent, decisions made and why, files, commands and their outcomes, \
what is done and what remains, and the user's latest request in their own words. Answer with the summary only; \
call no tool.";

/// Model calls one summary may take; older pieces past them are left out.
pub(crate) const MAX_PIECES: usize = 8;

/// What a text keeps at least when it is clipped, in tokens.
const CLIP_FLOOR: u64 = 64;

/// The summary and what asking for it cost.
pub(crate) struct Summary {
    pub text: String,
    pub usage: Usage,
    /// Model calls it took.
    pub pieces: usize,
}

/// Why there is no summary.
pub(crate) enum SummaryError {
    Cancelled,
    /// The server refused a piece's request as longer than its window: a request superpi
    /// counted `sent` tokens, and what the server said.
    Overflow {
        sent: u64,
        window: Option<u64>,
        requested: Option<u64>,
    },
    Failed(String),
}

/// Summarises `older` after `previous` (the last compaction's summary), in pieces that each fit
/// `frame.limits`.
pub(crate) async fn summarise(
    provider: &SharedProvider,
    previous: Option<&Message>,
    older: &[Entry],
    frame: &Frame<'_>,
    cancel: &CancellationToken,
) -> Result<Summary, SummaryError> {
    let messages: Vec<Message> = older.iter().map(|e| e.message.clone()).collect();
    let pieces = plan(previous, &messages, frame);
    let mut running = previous.cloned();
    let mut usage = Usage::default();
    let mut text = String::new();
    for (at, piece) in pieces.iter().enumerate() {
        let request = piece_request(running.as_ref(), &messages[piece.clone()], frame);
        let sent = tokens::request(&request);
        let mut stream = provider.stream(request);
        let terminal = loop {
            let event = tokio::select! {
                event = stream.next() => event,
                _ = cancel.cancelled() => return Err(SummaryError::Cancelled),
            };
            match event {
                Some(StreamEvent::Done(terminal)) => break terminal,
                Some(StreamEvent::Error(terminal)) => {
                    return Err(match terminal.error {
                        Some(ProviderError::ContextOverflow { window, requested, .. }) => {
                            SummaryError::Overflow { sent, window, requested }
                        }
                        other => {
                            let why = other.map(|e| e.to_string()).unwrap_or_else(|| "the model stream failed".into());
                            SummaryError::Failed(format!("the model could not summarise: {why}"))
                        }
                    });
                }
                Some(_) => {}
                None => return Err(SummaryError::Failed("the summary stream ended without an answer".into())),
            }
        };
        usage.add(terminal.usage);
        text = terminal.message.text().trim().to_string();
        if text.is_empty() {
            return Err(SummaryError::Failed("the model's summary was empty".into()));
        }
        if at + 1 < pieces.len() {
            running = Some(context::summary_message(&text, None));
        }
    }
    Ok(Summary { text, usage, pieces: pieces.len() })
}

/// The pieces of `messages` to summarise one after the other, oldest first: each as many whole
/// turns (between cut points) as fit beside the summary before it; at most [`MAX_PIECES`], the
/// oldest left out past them. A piece of one part that does not fit alone is clipped when its
/// request is made.
pub(crate) fn plan(previous: Option<&Message>, messages: &[Message], frame: &Frame<'_>) -> Vec<std::ops::Range<usize>> {
    if messages.is_empty() {
        return Vec::new();
    }
    let limit = context::request_limit(frame.limits);
    let fixed = tokens::request(&piece_request(None, &[], frame));
    // A later piece's summary so far is at most an answer long, under its preamble.
    let later = context::output_reserve(frame.limits) + tokens::message(&context::summary_message("", None));
    let sizes: Vec<u64> = messages.iter().map(tokens::message).collect();
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(
            superpi_providers::history::closed_prefixes(messages)
                .into_iter()
                .filter(|&i| i > 0 && matches!(messages[i].role, Role::User | Role::Assistant)),
        )
        .chain(std::iter::once(messages.len()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < messages.len() {
        let running = if start == 0 { previous.map_or(0, tokens::message) } else { later };
        let budget = limit.saturating_sub(fixed + running);
        let fits = |end: usize| sizes[start..end].iter().sum::<u64>() <= budget;
        let next = bounds.iter().copied().filter(|&b| b > start);
        // The farthest bound that fits; else the nearest, clipped.
        let end = next.clone().take_while(|&end| fits(end)).last().or_else(|| next.clone().next());
        let end = end.unwrap_or(messages.len());
        pieces.push(start..end);
        start = end;
    }
    let skip = pieces.len().saturating_sub(MAX_PIECES);
    pieces.drain(..skip);
    pieces
}

/// The request that asks for the summary of `piece` after `running`: the same system prompt
/// and tools as the turn's requests (the prefix a provider may have cached), the summary so
/// far, the piece (clipped to fit when it does not) and the instruction.
pub(crate) fn piece_request(running: Option<&Message>, piece: &[Message], frame: &Frame<'_>) -> ModelRequest {
    let instruction =
        Message { role: Role::User, content: vec![ContentBlock::text(SUMMARY_PROMPT)], usage: None, stop_reason: None };
    let mut request = ModelRequest {
        model: frame.model.to_string(),
        system: frame.system.map(str::to_string),
        messages: running.cloned().into_iter().chain(piece.iter().cloned()).chain([instruction]).collect(),
        tools: frame.tools.to_vec(),
        max_tokens: u32::try_from(context::output_reserve(frame.limits)).ok(),
        // A summary needs no thinking of its own.
        effort: None,
        output_schema: None,
    };
    let limit = context::request_limit(frame.limits);
    let excess = tokens::request(&request).saturating_sub(limit);
    if excess > 0 && !piece.is_empty() {
        let last = request.messages.len() - 1;
        let first = usize::from(running.is_some());
        clip(&mut request.messages[first..last], excess);
    }
    request
}

/// Shortens the longest texts of `messages` (text, thinking, tool results' output, tool calls'
/// string arguments) by about `excess` tokens in all, each keeping its head and tail around a
/// line that says how much was left out.
pub(crate) fn clip(messages: &mut [Message], excess: u64) {
    let mut left = excess;
    // A few rounds: each takes what it can from the longest text there is.
    for _ in 0..16 {
        if left == 0 {
            return;
        }
        let Some(text) = longest_text(messages) else { return };
        let size = tokens::text(text);
        if size <= CLIP_FLOOR {
            return;
        }
        let keep = size.saturating_sub(left).max(CLIP_FLOOR);
        let before = size;
        *text = clipped(text, keep);
        left = left.saturating_sub(before.saturating_sub(tokens::text(text)));
        if tokens::text(text) >= before {
            return;
        }
    }
}

/// The longest text of `messages` a clip may shorten.
fn longest_text(messages: &mut [Message]) -> Option<&mut String> {
    let mut texts: Vec<&mut String> = Vec::new();
    for message in messages.iter_mut() {
        for block in &mut message.content {
            match block {
                ContentBlock::Text { text } => texts.push(text),
                ContentBlock::Thinking { thinking, .. } => texts.push(thinking),
                ContentBlock::ToolResult { output, .. } => texts.push(output),
                ContentBlock::ToolCall { arguments: Value::Object(fields), .. } => {
                    texts.extend(fields.values_mut().filter_map(|v| match v {
                        Value::String(s) => Some(s),
                        _ => None,
                    }))
                }
                _ => {}
            }
        }
    }
    texts.into_iter().max_by_key(|t| t.len())
}

/// `text` cut to about `keep` tokens: its head and tail, the middle named by its size.
fn clipped(text: &str, keep: u64) -> String {
    let marker_room = 24;
    let keep_bytes = usize::try_from(keep.saturating_mul(3)).unwrap_or(usize::MAX).saturating_sub(marker_room * 3);
    if keep_bytes >= text.len() {
        return text.to_string();
    }
    let floor = |mut at: usize| {
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    let head = floor(keep_bytes / 2);
    let tail = floor(text.len() - keep_bytes / 2);
    let tail = if tail < head { head } else { tail };
    format!("{}\n[... {} bytes left out to fit the context window ...]\n{}", &text[..head], tail - head, &text[tail..])
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;

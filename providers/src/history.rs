//! The conversation as every vendor takes it, whatever the stored, forked or seeded history
//! holds: every tool call answered right after the message that made it, no result without
//! its call, no blank text, tool-call ids unique. The vendor modules build their requests from
//! [`paired`]'s output and only add their own rules (role alternation, id alphabets).
//!
//! Pure functions, no I/O: tested with whole-value comparisons and, in `tests/properties.rs`,
//! over generated histories against the fakes' rule checkers.

use std::collections::BTreeSet;

use superpi_proto::{ContentBlock, Message, Role};

/// The result given to a tool call that has none (a cancelled or crashed turn, a cut stream).
pub const INTERRUPTED: &str = "interrupted: no result was recorded for this tool call";

/// The text sent where a vendor needs a user message and the history has none (a history that
/// starts with the assistant, or holds nothing sendable).
pub const CONTINUE: &str = "(continue)";

/// The history in the shape every vendor takes, and the text of its system messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Paired {
    /// Messages of role `User`, `Assistant` and `Tool` only, such that:
    /// - an `Assistant` message with tool calls is followed at once by one `Tool` message
    ///   holding exactly one result per call, in call order, and `Tool` messages appear nowhere
    ///   else;
    /// - every message has at least one block; text blocks are never blank;
    /// - `User` messages hold text and images with their data only, `Assistant` messages no
    ///   results; an image without its data becomes a line of text saying so; an image a tool
    ///   returned (the `read` tool's, after its result in a `Tool` message) follows the results
    ///   in a `User` message, after a line naming the call, since no vendor takes an image in
    ///   every kind of tool result;
    /// - tool-call ids are unique over the conversation and not empty.
    pub messages: Vec<Message>,
    /// The text of the `System` messages, in order.
    pub system: Vec<String>,
}

impl Paired {
    /// The request's system prompt and the history's system messages, joined; `None` when
    /// all are blank.
    pub fn system_prompt(&self, prompt: Option<&str>) -> Option<String> {
        let parts: Vec<&str> =
            prompt.into_iter().chain(self.system.iter().map(String::as_str)).filter(|s| !is_blank(s)).collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
}

struct Pending {
    /// (id as stored, id as sent, name) per call.
    calls: Vec<(String, String, String)>,
    results: Vec<Option<ContentBlock>>,
    /// User text that came while results were still due: sent after them.
    deferred: Vec<ContentBlock>,
}

fn message(role: Role, content: Vec<ContentBlock>) -> Message {
    Message { role, content, usage: None, stop_reason: None }
}

fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// A result whose call is not in the message before it, kept as text for the model.
fn orphan_text(id: &str, name: &str, output: &str) -> ContentBlock {
    let name = if name.is_empty() { "a tool" } else { name };
    let output = if is_blank(output) { "(no output)" } else { output };
    ContentBlock::text(format!("[result of an earlier call {id} of {name}]\n{output}"))
}

/// A unique, non-empty id for a call: the stored one when it is free.
fn unique_id(id: &str, used: &mut BTreeSet<String>) -> String {
    let base = if id.is_empty() { "call" } else { id };
    let mut candidate = base.to_string();
    let mut n = 1;
    while used.contains(&candidate) {
        n += 1;
        candidate = format!("{base}_{n}");
    }
    used.insert(candidate.clone());
    candidate
}

impl Pending {
    /// The `Tool` message (a synthetic result for every call without one), then deferred text.
    fn close(self, out: &mut Vec<Message>) {
        let results = self
            .calls
            .iter()
            .zip(self.results)
            .map(|((_, wire, name), result)| {
                result.unwrap_or_else(|| ContentBlock::ToolResult {
                    tool_call_id: wire.clone(),
                    name: name.clone(),
                    output: INTERRUPTED.to_string(),
                    is_error: true,
                    structured: None,
                    details: None,
                })
            })
            .collect();
        out.push(message(Role::Tool, results));
        if !self.deferred.is_empty() {
            out.push(message(Role::User, self.deferred));
        }
    }

    /// Slots a result for one of these calls; gives it back when it answers none (or one
    /// already answered).
    fn answer(&mut self, result: ContentBlock) -> Option<ContentBlock> {
        let ContentBlock::ToolResult { tool_call_id, name, output, is_error, structured, details } = result else {
            return Some(result);
        };
        let slot =
            self.calls.iter().zip(&self.results).position(|((stored, _, _), r)| *stored == tool_call_id && r.is_none());
        let Some(slot) = slot else {
            return Some(ContentBlock::ToolResult { tool_call_id, name, output, is_error, structured, details });
        };
        let (_, wire, call_name) = &self.calls[slot];
        let name = if name.is_empty() { call_name.clone() } else { name };
        self.results[slot] =
            Some(ContentBlock::ToolResult { tool_call_id: wire.clone(), name, output, is_error, structured, details });
        None
    }
}

/// Pairs calls with results and drops what no vendor takes; see [`Paired`].
pub fn paired(messages: &[Message]) -> Paired {
    let mut out: Vec<Message> = Vec::new();
    let mut system = Vec::new();
    let mut pending: Option<Pending> = None;
    let mut used_ids = BTreeSet::new();
    for incoming in messages {
        match incoming.role {
            Role::System => {
                let text = crate::wire::joined_text(&incoming.content);
                if !is_blank(&text) {
                    system.push(text);
                }
            }
            Role::Assistant => {
                if let Some(done) = pending.take() {
                    done.close(&mut out);
                }
                let mut content = Vec::new();
                let mut calls = Vec::new();
                for block in &incoming.content {
                    match block {
                        ContentBlock::Text { text } if !is_blank(text) => content.push(block.clone()),
                        // A vendor's own blocks travel like thinking: its builder keeps or drops them.
                        ContentBlock::Thinking { .. } | ContentBlock::Hosted { .. } => content.push(block.clone()),
                        ContentBlock::ToolCall { id, name, arguments } => {
                            let wire = unique_id(id, &mut used_ids);
                            content.push(ContentBlock::ToolCall {
                                id: wire.clone(),
                                name: name.clone(),
                                arguments: arguments.clone(),
                            });
                            calls.push((id.clone(), wire, name.clone()));
                        }
                        _ => {}
                    }
                }
                if content.is_empty() {
                    continue;
                }
                out.push(message(Role::Assistant, content));
                if !calls.is_empty() {
                    let results = vec![None; calls.len()];
                    pending = Some(Pending { calls, results, deferred: Vec::new() });
                }
            }
            Role::User | Role::Tool => {
                let mut text = Vec::new();
                // The result an image of a tool message belongs to: (call id, tool name).
                let mut last_result: Option<(&str, &str)> = None;
                for block in &incoming.content {
                    match block {
                        ContentBlock::Text { text: t } if !is_blank(t) => text.push(block.clone()),
                        ContentBlock::Image { data: Some(_), .. } => {
                            if incoming.role == Role::Tool {
                                let label = match last_result {
                                    Some((id, name)) => format!("[the image that {name} call {id} returned]"),
                                    None => "[an image a tool returned]".to_string(),
                                };
                                text.push(ContentBlock::text(label));
                            }
                            text.push(block.clone())
                        }
                        ContentBlock::Image { media_type, .. } => {
                            text.push(ContentBlock::text(format!("[an image ({media_type}) that is no longer stored]")))
                        }
                        ContentBlock::ToolResult { tool_call_id, name, .. } => {
                            last_result = Some((tool_call_id, name));
                            let unanswered = match pending.as_mut() {
                                Some(pending) => pending.answer(block.clone()),
                                None => Some(block.clone()),
                            };
                            if let Some(ContentBlock::ToolResult { tool_call_id, name, output, .. }) = unanswered {
                                text.push(orphan_text(&tool_call_id, &name, &output));
                            }
                        }
                        _ => {}
                    }
                }
                match pending.as_mut() {
                    Some(pending) => pending.deferred.extend(text),
                    None if !text.is_empty() => out.push(message(Role::User, text)),
                    None => {}
                }
            }
        }
    }
    if let Some(done) = pending.take() {
        done.close(&mut out);
    }
    Paired { messages: out, system }
}

/// Indexes `i` in `0..messages.len()` where the history may be cut in two (the part before
/// summarised, the part from `i` kept): no tool call before `i` has its result at or after
/// `i`. A call is answered by the first result with its id after it; a call with no result
/// stored constrains nothing ([`paired`] answers it wherever it ends up).
pub fn closed_prefixes(messages: &[Message]) -> Vec<usize> {
    let mut results: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (at, message) in messages.iter().enumerate() {
        for block in &message.content {
            if let ContentBlock::ToolResult { tool_call_id, .. } = block {
                results.entry(tool_call_id.as_str()).or_default().push(at);
            }
        }
    }
    let mut cuts = Vec::new();
    // The furthest result that answers a call seen so far.
    let mut open_until: Option<usize> = None;
    for (at, message) in messages.iter().enumerate() {
        if open_until.is_none_or(|until| until < at) {
            cuts.push(at);
        }
        for block in &message.content {
            if let ContentBlock::ToolCall { id, .. } = block
                && let Some(answer) = results.get(id.as_str()).and_then(|at_list| at_list.iter().find(|&&r| r > at))
            {
                open_until = Some(open_until.map_or(*answer, |until| until.max(*answer)));
            }
        }
    }
    cuts
}

/// Merges consecutive turns of the same side (`is_assistant`), dropping empty ones, for the
/// vendors whose roles must alternate; opens with a user turn holding `opener` when the
/// history starts with the assistant or is empty. Results stay first in their user turn: a
/// `Tool` message only ever follows an assistant message.
pub(crate) fn alternating<T>(turns: impl IntoIterator<Item = (bool, Vec<T>)>, opener: T) -> Vec<(bool, Vec<T>)> {
    let mut out: Vec<(bool, Vec<T>)> = Vec::new();
    for (assistant, blocks) in turns {
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((side, merged)) if *side == assistant => merged.extend(blocks),
            _ => out.push((assistant, blocks)),
        }
    }
    if out.first().is_none_or(|(assistant, _)| *assistant) {
        out.insert(0, (false, vec![opener]));
    }
    out
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;

//! Building streams: [`StreamBuilder`] emits a well-formed stream for a provider (and
//! [`crate::Reassembler`] folds any stream back into a message).

use std::collections::VecDeque;

use serde_json::Value;
use superpi_proto::{ContentBlock, Message, Role, Usage};

use crate::stream::{ProviderError, StopReason, StreamEvent, Terminal, UsageDetails};

/// Tool-call arguments as assembled from their JSON text: empty text is `{}`, text that is not
/// JSON is kept as a string so the caller can report it to the model instead of losing it.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

pub(crate) fn assistant_message(content: Vec<ContentBlock>, usage: Usage, stop_reason: StopReason) -> Message {
    Message { role: Role::Assistant, content, usage: Some(usage), stop_reason: Some(stop_reason.as_str().to_string()) }
}

#[derive(Debug, Clone)]
pub(crate) enum OpenBlock {
    Text { index: u32, text: String },
    Thinking { index: u32, thinking: String, signature: Option<String>, redacted: bool },
    ToolCall { index: u32, id: Option<String>, name: Option<String>, arguments: String },
}

impl OpenBlock {
    pub(crate) fn index(&self) -> u32 {
        match self {
            OpenBlock::Text { index, .. } | OpenBlock::Thinking { index, .. } | OpenBlock::ToolCall { index, .. } => {
                *index
            }
        }
    }

    pub(crate) fn into_block(self) -> ContentBlock {
        match self {
            OpenBlock::Text { text, .. } => ContentBlock::Text { text },
            OpenBlock::Thinking { thinking, signature, redacted, .. } => {
                ContentBlock::Thinking { thinking, signature, redacted }
            }
            OpenBlock::ToolCall { index, id, name, arguments } => ContentBlock::ToolCall {
                id: id.unwrap_or_else(|| format!("call_{index}")),
                name: name.unwrap_or_default(),
                arguments: parse_arguments(&arguments),
            },
        }
    }
}

/// Which kind of block is open in a [`StreamBuilder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Text,
    Thinking,
    ToolCall,
}

/// Emits a stream that keeps the algebra by construction: `Start` first, one block open at a
/// time with increasing indexes, ends carrying the block's content, one terminal whose message
/// holds exactly the blocks closed so far. Providers' parsers drive it; events are queued and
/// taken with [`StreamBuilder::drain`] / [`StreamBuilder::pop`].
#[derive(Debug, Default)]
pub struct StreamBuilder {
    out: VecDeque<StreamEvent>,
    started: bool,
    finished: bool,
    next_index: u32,
    open: Option<OpenBlock>,
    closed: Vec<ContentBlock>,
    response_id: Option<String>,
    usage: Usage,
    details: UsageDetails,
}

impl StreamBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Emits `Start` (once; later calls only record a response id if none is known yet).
    pub fn start(&mut self, response_id: Option<String>) {
        if self.started {
            if self.response_id.is_none() {
                self.response_id = response_id;
            }
            return;
        }
        self.started = true;
        self.response_id = response_id.clone();
        self.out.push_back(StreamEvent::Start { response_id });
    }

    pub fn set_response_id(&mut self, id: String) {
        if self.response_id.is_none() {
            self.response_id = Some(id);
        }
    }

    pub fn usage_mut(&mut self) -> &mut Usage {
        &mut self.usage
    }

    /// The reasoning share of the usage, for vendors that report it.
    pub fn details_mut(&mut self) -> &mut UsageDetails {
        &mut self.details
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The kind of the open block, if any.
    pub fn open_kind(&self) -> Option<BlockKind> {
        self.open.as_ref().map(|b| match b {
            OpenBlock::Text { .. } => BlockKind::Text,
            OpenBlock::Thinking { .. } => BlockKind::Thinking,
            OpenBlock::ToolCall { .. } => BlockKind::ToolCall,
        })
    }

    /// The arguments text of the open tool call, if one is open.
    pub fn open_tool_arguments(&self) -> Option<&str> {
        match &self.open {
            Some(OpenBlock::ToolCall { arguments, .. }) => Some(arguments),
            _ => None,
        }
    }

    fn take_index(&mut self) -> u32 {
        let index = self.next_index;
        self.next_index += 1;
        index
    }

    /// Appends text, opening a text block if the open block is not one.
    pub fn text_delta(&mut self, delta: &str) {
        if self.finished || delta.is_empty() {
            return;
        }
        self.start(None);
        if !matches!(self.open, Some(OpenBlock::Text { .. })) {
            self.close();
            let index = self.take_index();
            self.open = Some(OpenBlock::Text { index, text: String::new() });
            self.out.push_back(StreamEvent::TextStart { index });
        }
        if let Some(OpenBlock::Text { index, text }) = &mut self.open {
            text.push_str(delta);
            self.out.push_back(StreamEvent::TextDelta { index: *index, delta: delta.to_string() });
        }
    }

    /// Opens a thinking block (closing any open block); `redacted` for encrypted reasoning.
    pub fn thinking_start(&mut self, redacted: bool) {
        if self.finished {
            return;
        }
        self.start(None);
        self.close();
        let index = self.take_index();
        self.open = Some(OpenBlock::Thinking { index, thinking: String::new(), signature: None, redacted });
        self.out.push_back(StreamEvent::ThinkingStart { index });
    }

    /// Appends reasoning text, opening a thinking block if the open block is not one.
    pub fn thinking_delta(&mut self, delta: &str) {
        if self.finished || delta.is_empty() {
            return;
        }
        if !matches!(self.open, Some(OpenBlock::Thinking { .. })) {
            self.thinking_start(false);
        }
        if let Some(OpenBlock::Thinking { index, thinking, .. }) = &mut self.open {
            thinking.push_str(delta);
            self.out.push_back(StreamEvent::ThinkingDelta { index: *index, delta: delta.to_string() });
        }
    }

    /// Sets (or extends) the signature of the open thinking block.
    pub fn thinking_signature(&mut self, part: &str) {
        if let Some(OpenBlock::Thinking { signature, .. }) = &mut self.open {
            signature.get_or_insert_with(String::new).push_str(part);
        }
    }

    /// Opens a tool-call block (closing any open block).
    pub fn tool_start(&mut self, id: Option<String>, name: Option<String>) {
        if self.finished {
            return;
        }
        self.start(None);
        self.close();
        let index = self.take_index();
        self.out.push_back(StreamEvent::ToolCallStart { index, id: id.clone(), name: name.clone() });
        self.open = Some(OpenBlock::ToolCall { index, id, name, arguments: String::new() });
    }

    /// Appends to the open tool call's arguments; `id`/`name` fill in late values.
    pub fn tool_delta(&mut self, delta: &str, id: Option<String>, name: Option<String>) {
        if self.finished {
            return;
        }
        if !matches!(self.open, Some(OpenBlock::ToolCall { .. })) {
            self.tool_start(id.clone(), name.clone());
        }
        if let Some(OpenBlock::ToolCall { index, id: open_id, name: open_name, arguments }) = &mut self.open {
            let late_id = match (&open_id, id) {
                (None, Some(new)) => {
                    *open_id = Some(new.clone());
                    Some(new)
                }
                _ => None,
            };
            let late_name = match (&open_name, name) {
                (None, Some(new)) => {
                    *open_name = Some(new.clone());
                    Some(new)
                }
                _ => None,
            };
            if delta.is_empty() && late_id.is_none() && late_name.is_none() {
                return;
            }
            arguments.push_str(delta);
            self.out.push_back(StreamEvent::ToolCallDelta {
                index: *index,
                delta: delta.to_string(),
                id: late_id,
                name: late_name,
            });
        }
    }

    /// A whole block the vendor's servers produced (closing any open block): kept in the
    /// message as [`ContentBlock::Hosted`] for `provider`, to be sent back unchanged.
    pub fn hosted(&mut self, provider: &str, block: Value) {
        if self.finished {
            return;
        }
        self.start(None);
        self.close();
        let index = self.take_index();
        self.out.push_back(StreamEvent::Hosted { index, provider: provider.to_string(), block: block.clone() });
        self.closed.push(ContentBlock::Hosted { provider: provider.to_string(), block });
    }

    /// Closes the open block, emitting its end with the assembled content. A tool call that
    /// never got an id gets `call_INDEX`.
    pub fn close(&mut self) {
        let Some(open) = self.open.take() else { return };
        let index = open.index();
        let block = open.into_block();
        let end = match &block {
            ContentBlock::Text { text } => StreamEvent::TextEnd { index, content: text.clone() },
            ContentBlock::Thinking { thinking, signature, redacted } => StreamEvent::ThinkingEnd {
                index,
                thinking: thinking.clone(),
                signature: signature.clone(),
                redacted: *redacted,
            },
            ContentBlock::ToolCall { id, name, arguments } => {
                StreamEvent::ToolCallEnd { index, id: id.clone(), name: name.clone(), arguments: arguments.clone() }
            }
            _ => return,
        };
        self.out.push_back(end);
        self.closed.push(block);
    }

    /// Voids everything since `Start` and announces a retry.
    pub fn reset(&mut self, retry_in_ms: u64) {
        if self.finished {
            return;
        }
        self.start(None);
        self.open = None;
        self.closed.clear();
        self.next_index = 0;
        self.usage = Usage::default();
        self.details = UsageDetails::default();
        self.response_id = None;
        self.out.push_back(StreamEvent::Reset { retry_in_ms });
    }

    /// Closes the open block and emits the `Done` terminal.
    pub fn done(&mut self, stop_reason: StopReason) {
        if self.finished {
            return;
        }
        self.start(None);
        self.close();
        self.finished = true;
        let message = assistant_message(std::mem::take(&mut self.closed), self.usage, stop_reason);
        self.out.push_back(StreamEvent::Done(Terminal {
            stop_reason,
            message,
            usage: self.usage,
            details: self.details,
            response_id: self.response_id.clone(),
            error: None,
        }));
    }

    /// Emits the `Error` terminal with the blocks closed so far (an open block is dropped).
    pub fn fail(&mut self, error: ProviderError) {
        self.fail_with(StopReason::Error, error);
    }

    /// Like [`StreamBuilder::fail`] with a chosen stop reason (`Aborted` for a cancel).
    pub fn fail_with(&mut self, stop_reason: StopReason, error: ProviderError) {
        if self.finished {
            return;
        }
        self.start(None);
        self.open = None;
        self.finished = true;
        let message = assistant_message(std::mem::take(&mut self.closed), self.usage, stop_reason);
        self.out.push_back(StreamEvent::Error(Terminal {
            stop_reason,
            message,
            usage: self.usage,
            details: self.details,
            response_id: self.response_id.clone(),
            error: Some(error),
        }));
    }

    /// Takes the next queued event.
    pub fn pop(&mut self) -> Option<StreamEvent> {
        self.out.pop_front()
    }

    /// Takes every queued event.
    pub fn drain(&mut self) -> impl Iterator<Item = StreamEvent> + '_ {
        self.out.drain(..)
    }
}

#[cfg(test)]
#[path = "assemble_tests.rs"]
mod tests;

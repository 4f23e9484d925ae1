//! [`Reassembler`]: folds any stream back into a message, tolerating a missing end.

use superpi_proto::{ContentBlock, Message, Role, Usage};

use crate::assemble::{OpenBlock, assistant_message};
use crate::stream::{ProviderError, StopReason, StreamEvent, Terminal};

/// Folds a stream into a message. Tolerant: a block whose end is missing is closed by the next
/// block's start, by the terminal, or by [`Reassembler::finish`]; a `Reset` voids what came
/// before it.
#[derive(Debug, Default, Clone)]
pub struct Reassembler {
    response_id: Option<String>,
    open: Option<OpenBlock>,
    closed: Vec<ContentBlock>,
    terminal: Option<Terminal>,
}

impl Reassembler {
    pub fn new() -> Self {
        Self::default()
    }

    fn close_open(&mut self) {
        if let Some(open) = self.open.take() {
            self.closed.push(open.into_block());
        }
    }

    /// Makes sure the open block is `index` (of the kind `make` builds), closing another one.
    fn ensure_open(&mut self, index: u32, make: impl FnOnce() -> OpenBlock) -> &mut OpenBlock {
        if self.open.as_ref().map(OpenBlock::index) != Some(index) {
            self.close_open();
            self.open = Some(make());
        }
        self.open.get_or_insert_with(|| OpenBlock::Text { index, text: String::new() })
    }

    pub fn push(&mut self, event: &StreamEvent) {
        if self.terminal.is_some() {
            return;
        }
        match event {
            StreamEvent::Start { response_id } => {
                if response_id.is_some() {
                    self.response_id.clone_from(response_id);
                }
            }
            StreamEvent::TextStart { index } => {
                self.close_open();
                self.open = Some(OpenBlock::Text { index: *index, text: String::new() });
            }
            StreamEvent::TextDelta { index, delta } => {
                let index = *index;
                if let OpenBlock::Text { text, .. } =
                    self.ensure_open(index, || OpenBlock::Text { index, text: String::new() })
                {
                    text.push_str(delta);
                }
            }
            StreamEvent::TextEnd { content, .. } => {
                self.open = None;
                self.closed.push(ContentBlock::Text { text: content.clone() });
            }
            StreamEvent::ThinkingStart { index } => {
                self.close_open();
                self.open = Some(OpenBlock::Thinking {
                    index: *index,
                    thinking: String::new(),
                    signature: None,
                    redacted: false,
                });
            }
            StreamEvent::ThinkingDelta { index, delta } => {
                let index = *index;
                let make = || OpenBlock::Thinking { index, thinking: String::new(), signature: None, redacted: false };
                if let OpenBlock::Thinking { thinking, .. } = self.ensure_open(index, make) {
                    thinking.push_str(delta);
                }
            }
            StreamEvent::ThinkingEnd { thinking, signature, redacted, .. } => {
                self.open = None;
                self.closed.push(ContentBlock::Thinking {
                    thinking: thinking.clone(),
                    signature: signature.clone(),
                    redacted: *redacted,
                });
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                self.close_open();
                self.open = Some(OpenBlock::ToolCall {
                    index: *index,
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                });
            }
            StreamEvent::ToolCallDelta { index, delta, id, name } => {
                let index = *index;
                let make = || OpenBlock::ToolCall { index, id: None, name: None, arguments: String::new() };
                if let OpenBlock::ToolCall { id: open_id, name: open_name, arguments, .. } =
                    self.ensure_open(index, make)
                {
                    if open_id.is_none() {
                        open_id.clone_from(id);
                    }
                    if open_name.is_none() {
                        open_name.clone_from(name);
                    }
                    arguments.push_str(delta);
                }
            }
            StreamEvent::ToolCallEnd { id, name, arguments, .. } => {
                self.open = None;
                self.closed.push(ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
            }
            StreamEvent::Hosted { provider, block, .. } => {
                self.close_open();
                self.closed.push(ContentBlock::Hosted { provider: provider.clone(), block: block.clone() });
            }
            StreamEvent::Reset { .. } => {
                self.open = None;
                self.closed.clear();
            }
            StreamEvent::Done(terminal) | StreamEvent::Error(terminal) => {
                self.terminal = Some(terminal.clone());
            }
        }
    }

    /// The blocks closed so far (ends seen).
    pub fn closed_blocks(&self) -> &[ContentBlock] {
        &self.closed
    }

    /// The terminal, once seen.
    pub fn terminal(&self) -> Option<&Terminal> {
        self.terminal.as_ref()
    }

    /// The message so far, with an open block closed as it stands.
    pub fn partial_message(&self) -> Message {
        let mut content = self.closed.clone();
        if let Some(open) = &self.open {
            content.push(open.clone().into_block());
        }
        Message { role: Role::Assistant, content, usage: None, stop_reason: None }
    }

    /// The terminal if one was seen; otherwise one built from what arrived, with `stop_reason`
    /// (`Aborted` after a cancel) and an error saying the stream ended without a terminal.
    pub fn finish(mut self, stop_reason: StopReason) -> Terminal {
        if let Some(terminal) = self.terminal.take() {
            return terminal;
        }
        self.close_open();
        let usage = Usage::default();
        let message = assistant_message(self.closed, usage, stop_reason);
        Terminal {
            stop_reason,
            message,
            usage,
            details: Default::default(),
            response_id: self.response_id,
            error: Some(ProviderError::Protocol {
                provider: "stream".to_string(),
                message: "the stream ended without a terminal event".to_string(),
            }),
        }
    }
}

/// Folds a whole stream into its terminal (see [`Reassembler::finish`]; a stream without a
/// terminal yields an `Error` stop reason).
pub fn reassemble<'a>(events: impl IntoIterator<Item = &'a StreamEvent>) -> Terminal {
    let mut reassembler = Reassembler::new();
    for event in events {
        reassembler.push(event);
    }
    reassembler.finish(StopReason::Error)
}

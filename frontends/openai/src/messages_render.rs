//! The Anthropic Messages renderer: one answer's `chat.completion.chunk`s (what
//! [`crate::render::Renderer`] makes of the turn's kernel events) into the Messages API's stream
//! events, and those events into the one message a client that does not stream gets. A
//! synchronous state machine, no I/O; the Messages wire types the gateway writes live here too.
//!
//! Events, in the API's order: `message_start` (with `ping` after it), then per content block
//! `content_block_start`, its `content_block_delta`s and `content_block_stop`, then
//! `message_delta` with the `stop_reason` and the usage, and `message_stop`. Answer text
//! (`delta.content`) goes into `text` blocks. The reasoning channel (thinking, tool progress,
//! notices) goes into `thinking` blocks when the request asked for thinking and for its text
//! (see [`Encoder::new`]), and is left out otherwise, as the API sends no thinking to a request
//! that did not ask for it. A failed turn ends with one `error` event instead of the last three.

use bytes::{Bytes, BytesMut};
use serde::Serialize;

use crate::render::Failure;
use crate::wire::Chunk;

/// `usage` of a message. superpi's gateway reports no cache use: those two counts are 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

/// A content block of the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    /// `signature` is empty: superpi's reasoning channel is not a model's signed thinking.
    Thinking {
        thinking: String,
        signature: String,
    },
}

/// The `delta` of a `content_block_delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockDelta {
    TextDelta { text: String },
    ThinkingDelta { thinking: String },
}

/// A message: the whole answer (not streaming), or its opening in `message_start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub role: &'static str,
    pub model: String,
    pub content: Vec<Block>,
    pub stop_reason: Option<&'static str>,
    pub stop_sequence: Option<String>,
    pub usage: Usage,
}

/// The `delta` of `message_delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageDelta {
    pub stop_reason: Option<&'static str>,
    pub stop_sequence: Option<String>,
}

/// The `error` of an `error` event (and of an error body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorObject {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub message: String,
}

/// One server-sent event of a streamed message; `type` in the data is also the event's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    MessageStart { message: Message },
    Ping,
    ContentBlockStart { index: usize, content_block: Block },
    ContentBlockDelta { index: usize, delta: BlockDelta },
    ContentBlockStop { index: usize },
    MessageDelta { delta: MessageDelta, usage: Usage },
    MessageStop,
    Error { error: ErrorObject },
}

impl StreamEvent {
    /// The SSE `event:` name (the data's `type`).
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::MessageStart { .. } => "message_start",
            StreamEvent::Ping => "ping",
            StreamEvent::ContentBlockStart { .. } => "content_block_start",
            StreamEvent::ContentBlockDelta { .. } => "content_block_delta",
            StreamEvent::ContentBlockStop { .. } => "content_block_stop",
            StreamEvent::MessageDelta { .. } => "message_delta",
            StreamEvent::MessageStop => "message_stop",
            StreamEvent::Error { .. } => "error",
        }
    }

    /// The event as one SSE frame: `event: NAME`, then its JSON as `data:`.
    pub fn frame(&self) -> Bytes {
        let json = serde_json::to_string(self).unwrap_or_default();
        let data = superpi_http::sse_data(&json);
        let mut out = BytesMut::with_capacity(data.len() + 32);
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(self.name().as_bytes());
        out.extend_from_slice(b"\n");
        out.extend_from_slice(&data);
        out.freeze()
    }
}

/// The Messages API's `stop_reason` for a Chat Completions `finish_reason`.
pub fn stop_reason(finish_reason: &str) -> &'static str {
    match finish_reason {
        "length" => "max_tokens",
        _ => "end_turn",
    }
}

/// The message id of an answer: `msg_CONVERSATION_TURN`, from the chunks' `chatcmpl-` id.
fn message_id(chunk_id: &str) -> String {
    let rest = chunk_id.strip_prefix("chatcmpl-").unwrap_or(chunk_id);
    format!("msg_{}", rest.replace('-', "_"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
}

/// Chunks in, Messages stream events out.
#[derive(Debug)]
pub struct Encoder {
    thinking: bool,
    started: bool,
    /// The block open now: its index and kind.
    open: Option<(usize, Kind)>,
    /// Blocks started so far (the next block's index).
    blocks: usize,
    /// Whether a text block came before (a later one starts without the renderer's paragraph
    /// break: blocks are apart already).
    any_text: bool,
    stop_reason: Option<&'static str>,
    usage: Usage,
}

impl Encoder {
    /// `thinking`: the request asked for thinking and for its text (`thinking.type` `enabled`
    /// or `adaptive`, `display` not `omitted`), so the reasoning channel becomes `thinking`
    /// blocks; otherwise it is left out.
    pub fn new(thinking: bool) -> Self {
        Encoder {
            thinking,
            started: false,
            open: None,
            blocks: 0,
            any_text: false,
            stop_reason: None,
            usage: Usage::default(),
        }
    }

    /// The events for `chunks`; `end` is set when the answer is over (with its failure, if
    /// any). The first chunk opens the message.
    pub fn events(&mut self, chunks: &[Chunk], end: Option<Option<&Failure>>) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for chunk in chunks {
            if !self.started {
                self.started = true;
                let message = Message {
                    id: message_id(&chunk.id),
                    kind: "message",
                    role: "assistant",
                    model: chunk.model.clone(),
                    content: Vec::new(),
                    stop_reason: None,
                    stop_sequence: None,
                    usage: Usage::default(),
                };
                out.push(StreamEvent::MessageStart { message });
                out.push(StreamEvent::Ping);
            }
            for choice in &chunk.choices {
                if let Some(thinking) = choice.delta.reasoning_content.as_deref()
                    && self.thinking
                {
                    self.delta(Kind::Thinking, thinking, &mut out);
                }
                if let Some(text) = choice.delta.content.as_deref() {
                    self.delta(Kind::Text, text, &mut out);
                }
                if let Some(reason) = choice.finish_reason {
                    self.stop_reason = Some(stop_reason(reason));
                }
            }
            if let Some(usage) = chunk.usage {
                self.usage.input_tokens = usage.prompt_tokens;
                self.usage.output_tokens = usage.completion_tokens;
            }
        }
        match end {
            None => {}
            Some(Some(failure)) => {
                let error = ErrorObject { kind: "api_error", message: failure.message.clone() };
                out.push(StreamEvent::Error { error });
            }
            Some(None) => {
                self.close(&mut out);
                let delta =
                    MessageDelta { stop_reason: Some(self.stop_reason.unwrap_or("end_turn")), stop_sequence: None };
                out.push(StreamEvent::MessageDelta { delta, usage: self.usage });
                out.push(StreamEvent::MessageStop);
            }
        }
        out
    }

    fn close(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some((index, _)) = self.open.take() {
            out.push(StreamEvent::ContentBlockStop { index });
        }
    }

    /// `text` into a block of `kind`: the open one, or a new one after closing the open one.
    fn delta(&mut self, kind: Kind, text: &str, out: &mut Vec<StreamEvent>) {
        let mut text = text;
        let index = match self.open {
            Some((index, open)) if open == kind => index,
            _ => {
                // A new block needs no line breaks ahead of it: the renderer's paragraph break
                // before later text, its line breaks around progress lines.
                match kind {
                    Kind::Text if self.any_text => text = text.strip_prefix("\n\n").unwrap_or(text),
                    Kind::Thinking => text = text.trim_start_matches('\n'),
                    Kind::Text => {}
                }
                if text.is_empty() {
                    return;
                }
                self.close(out);
                let index = self.blocks;
                self.blocks += 1;
                self.open = Some((index, kind));
                let content_block = match kind {
                    Kind::Text => {
                        self.any_text = true;
                        Block::Text { text: String::new() }
                    }
                    Kind::Thinking => Block::Thinking { thinking: String::new(), signature: String::new() },
                };
                out.push(StreamEvent::ContentBlockStart { index, content_block });
                index
            }
        };
        if text.is_empty() {
            return;
        }
        let delta = match kind {
            Kind::Text => BlockDelta::TextDelta { text: text.to_string() },
            Kind::Thinking => BlockDelta::ThinkingDelta { thinking: text.to_string() },
        };
        out.push(StreamEvent::ContentBlockDelta { index, delta });
    }
}

/// The message a whole stream of events adds up to (what a client that does not stream gets):
/// `None` without a `message_start`.
pub fn message_of(events: &[StreamEvent]) -> Option<Message> {
    let mut message: Option<Message> = None;
    for event in events {
        match event {
            StreamEvent::MessageStart { message: start } => message = Some(start.clone()),
            StreamEvent::ContentBlockStart { content_block, .. } => {
                if let Some(m) = message.as_mut() {
                    m.content.push(content_block.clone());
                }
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                match (message.as_mut().and_then(|m| m.content.get_mut(*index)), delta) {
                    (Some(Block::Text { text }), BlockDelta::TextDelta { text: more }) => text.push_str(more),
                    (Some(Block::Thinking { thinking, .. }), BlockDelta::ThinkingDelta { thinking: more }) => {
                        thinking.push_str(more)
                    }
                    _ => {}
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(m) = message.as_mut() {
                    m.stop_reason = delta.stop_reason;
                    m.stop_sequence = delta.stop_sequence.clone();
                    m.usage = *usage;
                }
            }
            _ => {}
        }
    }
    message
}

#[cfg(test)]
#[path = "messages_render_tests.rs"]
mod tests;

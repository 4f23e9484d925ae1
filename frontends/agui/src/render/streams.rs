//! The content streams of the renderer: text, reasoning and tool-call messages opened,
//! fed through the merge window, and closed in the order the AG-UI verifier demands; and the
//! end of a model call, which sends whatever the deltas did not carry.

use serde_json::Value;
use superpi_proto::ContentBlock;

use super::{OpenMessage, Pending, Renderer, StreamKind, ToolCall, blocks_text};
use crate::wire::{AguiEvent, json_text};

impl Renderer {
    /// A message id. Within a turn it is `PREFIX-tTURN-K`, K counting the turn's messages,
    /// so every stream that saw the whole turn names its messages alike, and ids never repeat
    /// across the runs of a thread whatever run ids the client chose.
    pub(super) fn fresh_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        match self.turn {
            Some((turn, ref mut k)) => {
                *k += 1;
                format!("{prefix}-t{turn}-{k}")
            }
            None => {
                let run = self.run.as_ref().map(|r| r.run_id.as_str()).unwrap_or("none");
                format!("{prefix}-{run}-{}", self.next_id)
            }
        }
    }

    pub(super) fn assistant_id(&mut self) -> String {
        if let Some(id) = &self.assistant_id {
            return id.clone();
        }
        let id = self.fresh_id("msg");
        self.assistant_id = Some(id.clone());
        id
    }

    pub(super) fn open_text(&mut self, index: u32, out: &mut Vec<AguiEvent>, now_ms: u64) {
        if self.text.as_ref().is_some_and(|t| t.index == index) {
            return;
        }
        self.flush_pending(out, now_ms);
        self.close_streams(out);
        // The first text block of a model call is the assistant message that carries its
        // tool calls; a later one is a message of its own.
        let id = if self.assistant_id.is_none() { self.assistant_id() } else { self.fresh_id("msg") };
        out.push(AguiEvent::TextMessageStart { message_id: id.clone(), role: "assistant".into() });
        self.text = Some(OpenMessage { id, index });
    }

    pub(super) fn open_reasoning(&mut self, index: u32, out: &mut Vec<AguiEvent>, now_ms: u64) {
        if self.reasoning.as_ref().is_some_and(|r| r.index == index) {
            return;
        }
        self.flush_pending(out, now_ms);
        self.close_streams(out);
        let id = self.fresh_id("reasoning");
        out.push(AguiEvent::ReasoningStart { message_id: id.clone() });
        out.push(AguiEvent::ReasoningMessageStart { message_id: id.clone(), role: "reasoning".into() });
        self.reasoning = Some(OpenMessage { id, index });
    }

    pub(super) fn tool_delta(
        &mut self,
        index: u32,
        delta: Option<&str>,
        id: Option<&str>,
        name: Option<&str>,
        out: &mut Vec<AguiEvent>,
        now_ms: u64,
    ) {
        let known = self.tools.iter().position(|t| t.index == index && !t.ended);
        let call_id = match known {
            Some(pos) => self.tools[pos].id.clone(),
            None => {
                // A call opens once its id and name are known; argument text before that
                // is sent whole when the call is announced.
                let (Some(id), Some(name)) = (id, name) else { return };
                if self.tools.iter().any(|t| t.id == id) {
                    return;
                }
                self.flush_pending(out, now_ms);
                self.close_streams(out);
                let parent = self.assistant_id();
                out.push(AguiEvent::ToolCallStart {
                    tool_call_id: id.to_string(),
                    tool_call_name: name.to_string(),
                    parent_message_id: Some(parent),
                });
                self.tools.push(ToolCall { index, id: id.to_string(), args_sent: false, ended: false });
                id.to_string()
            }
        };
        if let Some(delta) = delta.filter(|d| !d.is_empty()) {
            if let Some(tool) = self.tools.iter_mut().find(|t| t.id == call_id) {
                tool.args_sent = true;
            }
            self.content(StreamKind::Args, &call_id, delta, out, now_ms);
        }
    }

    /// Content for a stream: sent now when the merge window since the last content event
    /// has passed, held otherwise.
    pub(super) fn content(&mut self, kind: StreamKind, id: &str, delta: &str, out: &mut Vec<AguiEvent>, now_ms: u64) {
        if delta.is_empty() {
            return;
        }
        if let Some(pending) = &mut self.pending {
            if pending.kind == kind && pending.id == id {
                pending.buf.push_str(delta);
                return;
            }
            self.flush_pending(out, now_ms);
        }
        let due = self.last_content_ms.is_none_or(|last| now_ms >= last + self.opts.merge_window_ms);
        if due {
            self.last_content_ms = Some(now_ms);
            out.push(content_event(kind, id, delta.to_string()));
        } else {
            self.pending = Some(Pending { kind, id: id.to_string(), buf: delta.to_string() });
        }
    }

    pub(super) fn flush_pending(&mut self, out: &mut Vec<AguiEvent>, now_ms: u64) {
        if let Some(pending) = self.pending.take() {
            self.last_content_ms = Some(now_ms);
            out.push(content_event(pending.kind, &pending.id, pending.buf));
        }
    }

    pub(super) fn close_text_and_reasoning(&mut self, out: &mut Vec<AguiEvent>) {
        if let Some(reasoning) = self.reasoning.take() {
            out.push(AguiEvent::ReasoningMessageEnd { message_id: reasoning.id.clone() });
            out.push(AguiEvent::ReasoningEnd { message_id: reasoning.id });
        }
        if let Some(text) = self.text.take() {
            out.push(AguiEvent::TextMessageEnd { message_id: text.id });
        }
    }

    /// Closes every open stream (held content must have been flushed).
    pub(super) fn close_streams(&mut self, out: &mut Vec<AguiEvent>) {
        self.close_text_and_reasoning(out);
        for tool in self.tools.iter_mut().filter(|t| !t.ended) {
            tool.ended = true;
            out.push(AguiEvent::ToolCallEnd { tool_call_id: tool.id.clone() });
        }
    }

    pub(super) fn end_tool(&mut self, tool_call_id: &str, out: &mut Vec<AguiEvent>) {
        if let Some(tool) = self.tools.iter_mut().find(|t| t.id == tool_call_id && !t.ended) {
            tool.ended = true;
            out.push(AguiEvent::ToolCallEnd { tool_call_id: tool.id.clone() });
        }
    }

    /// Forgets the current model call (its tool calls stay known until the turn ends, so a
    /// later `tool_started` does not announce them twice).
    pub(super) fn reset_call(&mut self) {
        self.assistant_id = None;
        self.call_text.clear();
        self.call_thinking.clear();
    }

    /// A tool call announced whole: START, ARGS, END unless its deltas already did.
    pub(super) fn whole_tool_call(&mut self, id: &str, name: &str, arguments: &Value, out: &mut Vec<AguiEvent>) {
        match self.tools.iter_mut().find(|t| t.id == id) {
            Some(tool) => {
                if !tool.ended {
                    if !tool.args_sent {
                        out.push(AguiEvent::ToolCallArgs { tool_call_id: id.into(), delta: json_text(arguments) });
                        tool.args_sent = true;
                    }
                    tool.ended = true;
                    out.push(AguiEvent::ToolCallEnd { tool_call_id: id.into() });
                }
            }
            None => {
                let parent = self.assistant_id();
                out.push(AguiEvent::ToolCallStart {
                    tool_call_id: id.into(),
                    tool_call_name: name.into(),
                    parent_message_id: Some(parent),
                });
                out.push(AguiEvent::ToolCallArgs { tool_call_id: id.into(), delta: json_text(arguments) });
                out.push(AguiEvent::ToolCallEnd { tool_call_id: id.into() });
                self.tools.push(ToolCall { index: u32::MAX, id: id.into(), args_sent: true, ended: true });
            }
        }
    }

    /// The end of a model call: what the deltas missed, then every stream closed.
    pub(super) fn complete_assistant(&mut self, content: &[ContentBlock], out: &mut Vec<AguiEvent>) {
        let thinking: String = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Thinking { thinking, .. } => Some(thinking.as_str()),
                _ => None,
            })
            .collect();
        if let Some(rest) = thinking.strip_prefix(self.call_thinking.as_str()).filter(|r| !r.is_empty()) {
            let id = match &self.reasoning {
                Some(r) => r.id.clone(),
                None => {
                    self.close_streams(out);
                    let id = self.fresh_id("reasoning");
                    out.push(AguiEvent::ReasoningStart { message_id: id.clone() });
                    out.push(AguiEvent::ReasoningMessageStart { message_id: id.clone(), role: "reasoning".into() });
                    self.reasoning = Some(OpenMessage { id: id.clone(), index: u32::MAX });
                    id
                }
            };
            out.push(AguiEvent::ReasoningMessageContent { message_id: id, delta: rest.to_string() });
        }
        let text = blocks_text(content);
        // What was streamed is not the start of the message (a watcher attached mid-message,
        // or deltas were lost): the client's copy cannot be patched, so it gets the history.
        if !thinking.starts_with(self.call_thinking.as_str()) || !text.starts_with(self.call_text.as_str()) {
            self.wants_history = true;
        }
        if let Some(rest) = text.strip_prefix(self.call_text.as_str()).filter(|r| !r.is_empty()) {
            let id = match &self.text {
                Some(t) => t.id.clone(),
                None => {
                    self.close_streams(out);
                    let id = if self.assistant_id.is_none() { self.assistant_id() } else { self.fresh_id("msg") };
                    out.push(AguiEvent::TextMessageStart { message_id: id.clone(), role: "assistant".into() });
                    self.text = Some(OpenMessage { id: id.clone(), index: u32::MAX });
                    id
                }
            };
            out.push(AguiEvent::TextMessageContent { message_id: id, delta: rest.to_string() });
        }
        self.close_text_and_reasoning(out);
        for block in content {
            if let ContentBlock::ToolCall { id, name, arguments } = block {
                self.whole_tool_call(id, name, arguments, out);
            }
        }
        self.close_streams(out);
        self.reset_call();
    }
}

pub(super) fn content_event(kind: StreamKind, id: &str, delta: String) -> AguiEvent {
    let id = id.to_string();
    match kind {
        StreamKind::Text => AguiEvent::TextMessageContent { message_id: id, delta },
        StreamKind::Reasoning => AguiEvent::ReasoningMessageContent { message_id: id, delta },
        StreamKind::Args => AguiEvent::ToolCallArgs { tool_call_id: id, delta },
    }
}

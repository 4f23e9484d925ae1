//! The renderer: one turn's kernel events into `chat.completion.chunk`s. A synchronous state
//! machine (`start`, `render`, `flush`), no I/O.
//!
//! One id across the chunks; the role in the first delta; answer text as `delta.content`;
//! thinking, tool progress, notices and failures as `delta.reasoning_content`; then either
//! exactly one chunk with a `finish_reason` (and, when asked, one chunk with `usage` and no
//! choices), or, for a turn that failed, no finishing chunk but a [`Failure`] that the caller
//! sends the way the OpenAI API reports errors. A turn held to an output schema
//! ([`Renderer::structured`]) sends its accepted JSON as the whole content, at its end: the
//! model's text on the way (a refused answer, words between tool calls) is not the answer.

use std::collections::HashSet;

use superpi_proto::method::OUTPUT_SCHEMA_FAILED;
use superpi_proto::{ContentBlock, Event, EventBody, Role};

use crate::wire::{Chunk, ChunkChoice, Delta, OUTPUT_SCHEMA_MISMATCH, Usage};

/// Longest tool argument or error text shown in a progress line.
const PROGRESS_LIMIT: usize = 200;

/// What every chunk of one answer shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    pub id: String,
    pub created: i64,
    pub model: String,
    pub include_usage: bool,
    /// Only this turn's events are rendered: a session may queue several.
    pub turn_id: i64,
}

#[derive(Debug)]
pub struct Renderer {
    opts: RenderOptions,
    started: bool,
    turn_started: bool,
    finished: bool,
    /// Text and thinking streamed for the model call in progress.
    text: String,
    thinking: String,
    /// Whether answer text was sent before (a later message's text gets a paragraph break).
    any_text: bool,
    /// Whether the reasoning channel's last character was a newline (or nothing was sent).
    reasoning_at_line_start: bool,
    blocked: HashSet<String>,
    usage: (u64, u64),
    saw_usage: bool,
    /// The subscription lost events: deltas of the model call in progress are skipped until its
    /// completed message, whose text then fills in what the client lacks.
    skip_deltas: bool,
    failure: Option<Failure>,
    /// The turn has an output schema: content is its end's `result` alone.
    structured: bool,
}

/// Why an answer ended without a finishing chunk: the turn failed, or the kernel went away.
/// The API has no `finish_reason` for this, so it goes out as an error object (in a stream) or
/// an HTTP error (a whole completion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The OpenAI error `code`.
    pub code: &'static str,
    pub message: String,
}

fn clip(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(PROGRESS_LIMIT) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

impl Renderer {
    pub fn new(opts: RenderOptions) -> Self {
        Renderer {
            opts,
            started: false,
            turn_started: false,
            finished: false,
            text: String::new(),
            thinking: String::new(),
            any_text: false,
            reasoning_at_line_start: true,
            blocked: HashSet::new(),
            usage: (0, 0),
            saw_usage: false,
            skip_deltas: false,
            failure: None,
            structured: false,
        }
    }

    /// Holds the answer to the turn's output schema: content is only the accepted JSON.
    pub fn structured(mut self, structured: bool) -> Self {
        self.structured = structured;
        self
    }

    /// Set once the answer ended in a failure (then [`Renderer::is_finished`] is true too).
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// True once this turn's `turn_started` was seen (a cancel then reaches this turn).
    pub fn turn_started(&self) -> bool {
        self.turn_started
    }

    /// The subscription lagged: some events were not delivered (deltas are lost for good; the
    /// stored events come again). What was streamed of the current model call is a prefix of
    /// its text, so its later deltas are skipped and its completed message fills in the rest.
    pub fn lagged(&mut self) {
        self.skip_deltas = true;
    }

    /// True once the finishing chunk went out: nothing more comes.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn chunk(&self, delta: Delta, finish_reason: Option<&'static str>) -> Chunk {
        Chunk {
            id: self.opts.id.clone(),
            object: "chat.completion.chunk",
            created: self.opts.created,
            model: self.opts.model.clone(),
            choices: vec![ChunkChoice { index: 0, delta, finish_reason }],
            usage: None,
        }
    }

    /// The first chunk: the assistant role with empty content.
    pub fn start(&mut self) -> Vec<Chunk> {
        if self.started {
            return Vec::new();
        }
        self.started = true;
        vec![self.chunk(Delta { role: Some("assistant"), content: Some(String::new()), ..Default::default() }, None)]
    }

    fn content(&mut self, text: &str) -> Option<Chunk> {
        if text.is_empty() {
            return None;
        }
        let mut out = String::new();
        if self.text.is_empty() && self.any_text {
            out.push_str("\n\n");
        }
        self.text.push_str(text);
        self.any_text = true;
        out.push_str(text);
        Some(self.chunk(Delta { content: Some(out), ..Default::default() }, None))
    }

    fn reasoning(&mut self, text: &str) -> Option<Chunk> {
        if text.is_empty() {
            return None;
        }
        self.reasoning_at_line_start = text.ends_with('\n');
        Some(self.chunk(Delta { reasoning_content: Some(text.to_string()), ..Default::default() }, None))
    }

    /// A progress line on the reasoning channel, on a line of its own.
    fn progress(&mut self, line: &str) -> Option<Chunk> {
        let mut text = String::new();
        if !self.reasoning_at_line_start {
            text.push('\n');
        }
        text.push_str(line);
        text.push('\n');
        self.reasoning(&text)
    }

    fn finish(&mut self, reason: &'static str) -> Vec<Chunk> {
        self.finished = true;
        let mut out = vec![self.chunk(Delta::default(), Some(reason))];
        if self.opts.include_usage {
            let mut usage = self.chunk(Delta::default(), None);
            usage.choices.clear();
            usage.usage = Some(Usage::new(self.usage.0, self.usage.1));
            out.push(usage);
        }
        out
    }

    /// Ends the answer with a failure: its text on the reasoning channel (for readers that show
    /// that channel), and no finishing chunk.
    fn fail(&mut self, code: &'static str, message: String) -> Vec<Chunk> {
        let out: Vec<Chunk> = self.progress(&format!("[error] {message}")).into_iter().collect();
        self.finished = true;
        self.failure = Some(Failure { code, message });
        out
    }

    /// The chunks for one kernel event (none for events of other turns).
    pub fn render(&mut self, event: &Event) -> Vec<Chunk> {
        if self.finished || event.turn_id != Some(self.opts.turn_id) {
            return Vec::new();
        }
        let mut out = self.start();
        let one = match &event.body {
            EventBody::TurnStarted {} => {
                self.turn_started = true;
                None
            }
            EventBody::TextDelta { .. } | EventBody::ThinkingDelta { .. } if self.skip_deltas => None,
            EventBody::TextDelta { .. } if self.structured => None,
            EventBody::TextDelta { delta, .. } => self.content(delta),
            EventBody::ThinkingDelta { delta, .. } => {
                self.thinking.push_str(delta);
                self.reasoning(delta)
            }
            EventBody::MessageCompleted { role: Role::Assistant, content, usage } => {
                if let (Some(u), false) = (usage, self.saw_usage) {
                    // Used only when the kernel sends no usage_updated.
                    self.usage.0 += u.input_tokens;
                    self.usage.1 += u.output_tokens;
                }
                out.extend(self.complete_message(content));
                None
            }
            EventBody::UsageUpdated { input_tokens, output_tokens, .. } => {
                if !self.saw_usage {
                    self.saw_usage = true;
                    self.usage = (0, 0);
                }
                self.usage.0 += input_tokens;
                self.usage.1 += output_tokens;
                None
            }
            EventBody::StreamReset { retry_in_ms } => {
                self.text.clear();
                self.thinking.clear();
                self.progress(&format!("[model stream interrupted; retrying in {retry_in_ms} ms]"))
            }
            EventBody::ToolStarted { name, arguments, .. } => {
                let args = serde_json::to_string(arguments).unwrap_or_default();
                self.progress(&format!("[tool] {name} {}", clip(&args)))
            }
            EventBody::ToolBlocked { tool_call_id, name, reason } => {
                self.blocked.insert(tool_call_id.clone());
                self.progress(&format!("[tool] {name} blocked: {}", clip(reason)))
            }
            EventBody::ToolCompleted { tool_call_id, name, is_error, output, .. } => {
                if self.blocked.remove(tool_call_id) {
                    None
                } else if *is_error {
                    let text = output.as_str().map(str::to_string).unwrap_or_else(|| output.to_string());
                    let first = text.lines().next().unwrap_or("");
                    self.progress(&format!("[tool] {name} failed: {}", clip(first)))
                } else {
                    self.progress(&format!("[tool] {name} done"))
                }
            }
            EventBody::Handoff { from, to, .. } => self.progress(&format!("[handoff] {from} -> {to}")),
            EventBody::Notice { level, message } if level != "debug" => {
                self.progress(&format!("[{level}] {}", clip(message)))
            }
            EventBody::TurnCompleted { stop_reason, result } => {
                if self.structured {
                    out.extend(self.content(result.as_deref().unwrap_or_default()));
                }
                let reason = if stop_reason == "max_tokens" { "length" } else { "stop" };
                out.extend(self.finish(reason));
                None
            }
            EventBody::TurnError { error } => {
                let code = match self.structured && error.starts_with(OUTPUT_SCHEMA_FAILED) {
                    true => OUTPUT_SCHEMA_MISMATCH,
                    false => "turn_failed",
                };
                out.extend(self.fail(code, error.clone()));
                None
            }
            EventBody::TurnCancelled {} => {
                out.extend(self.progress("[cancelled]"));
                out.extend(self.finish("stop"));
                None
            }
            _ => None,
        };
        out.extend(one);
        out
    }

    /// An assistant message is complete: send what its deltas did not (a subscription that
    /// lagged misses deltas, the stored message has them all), then start the next call fresh.
    fn complete_message(&mut self, content: &[ContentBlock]) -> Vec<Chunk> {
        let mut text = String::new();
        let mut thinking = String::new();
        for block in content {
            match block {
                ContentBlock::Text { text: t } => text.push_str(t),
                ContentBlock::Thinking { thinking: t, redacted: false, .. } => thinking.push_str(t),
                _ => {}
            }
        }
        let mut out = Vec::new();
        if let Some(rest) = thinking.strip_prefix(self.thinking.as_str()) {
            out.extend(self.reasoning(rest));
        }
        if !self.thinking.is_empty() || !thinking.is_empty() {
            // The answer text follows on its own line in readers that join both channels.
            if !self.reasoning_at_line_start {
                out.extend(self.reasoning("\n"));
            }
        }
        if let (Some(rest), false) = (text.strip_prefix(self.text.as_str()), self.structured) {
            let rest = rest.to_string();
            out.extend(self.content(&rest));
        }
        self.text.clear();
        self.thinking.clear();
        self.skip_deltas = false;
        out
    }

    /// The kernel connection ended before the turn did: a failure.
    pub fn flush(&mut self) -> Vec<Chunk> {
        if self.finished {
            return Vec::new();
        }
        let mut out = self.start();
        out.extend(self.fail("kernel_unavailable", "the connection to the superpi kernel was lost".into()));
        out
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "render_props_tests.rs"]
mod props;

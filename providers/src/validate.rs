//! A checker of the stream algebra's invariants, for tests of every provider (and of consumers
//! that want to assert what they were fed).
//!
//! The rules: `Start` first and only once; each content block opens with its start, has zero or
//! more deltas and closes with its end, one block open at a time, start indexes strictly
//! increasing (gaps allowed); ends carry the concatenation of their deltas; `Reset` voids the
//! blocks so far and lets indexes begin again; a tool call ends with an id (its name may be
//! empty when the API never sent one: the kernel answers that as an unknown tool); exactly one terminal, last. `Done` needs every
//! block closed and no error; `Error` carries an error, and an open block is allowed (a stream cut
//! mid-block). The terminal's message holds exactly the blocks closed since the last reset.

use superpi_proto::ContentBlock;

use crate::stream::{StopReason, StreamEvent};

/// Which invariant broke, at which event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {position}: {rule}")]
pub struct AlgebraViolation {
    pub position: usize,
    pub rule: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    ToolCall,
}

#[derive(Debug)]
struct Open {
    index: u32,
    kind: Kind,
    deltas: String,
}

/// Checks events one at a time.
#[derive(Debug, Default)]
pub struct Validator {
    position: usize,
    started: bool,
    terminated: bool,
    last_index: Option<u32>,
    open: Option<Open>,
    closed: Vec<ContentBlock>,
}

impl Validator {
    pub fn new() -> Self {
        Self::default()
    }

    fn violation(&self, rule: impl Into<String>) -> AlgebraViolation {
        AlgebraViolation { position: self.position, rule: rule.into() }
    }

    fn open_block(&mut self, index: u32, kind: Kind) -> Result<(), AlgebraViolation> {
        if let Some(open) = &self.open {
            return Err(self.violation(format!("block {index} starts while block {} is open", open.index)));
        }
        if let Some(last) = self.last_index.filter(|last| index <= *last) {
            return Err(self.violation(format!("block index {index} does not increase (last {last})")));
        }
        self.last_index = Some(index);
        self.open = Some(Open { index, kind, deltas: String::new() });
        Ok(())
    }

    fn delta(&mut self, index: u32, kind: Kind, delta: &str) -> Result<(), AlgebraViolation> {
        match &mut self.open {
            Some(open) if open.index == index && open.kind == kind => {
                open.deltas.push_str(delta);
                Ok(())
            }
            _ => Err(self.violation(format!("{kind:?} delta for block {index}, which is not the open block"))),
        }
    }

    fn end(&mut self, index: u32, kind: Kind) -> Result<String, AlgebraViolation> {
        match self.open.take() {
            Some(open) if open.index == index && open.kind == kind => Ok(open.deltas),
            other => {
                self.open = other;
                Err(self.violation(format!("{kind:?} end for block {index}, which is not the open block")))
            }
        }
    }

    /// Checks the next event.
    pub fn push(&mut self, event: &StreamEvent) -> Result<(), AlgebraViolation> {
        let result = self.check(event);
        self.position += 1;
        result
    }

    fn check(&mut self, event: &StreamEvent) -> Result<(), AlgebraViolation> {
        if self.terminated {
            return Err(self.violation("event after the terminal"));
        }
        if !self.started {
            if !matches!(event, StreamEvent::Start { .. }) {
                return Err(self.violation("the first event is not Start"));
            }
            self.started = true;
            return Ok(());
        }
        match event {
            StreamEvent::Start { .. } => return Err(self.violation("a second Start")),
            StreamEvent::TextStart { index } => self.open_block(*index, Kind::Text)?,
            StreamEvent::ThinkingStart { index } => self.open_block(*index, Kind::Thinking)?,
            StreamEvent::ToolCallStart { index, .. } => self.open_block(*index, Kind::ToolCall)?,
            StreamEvent::TextDelta { index, delta } => self.delta(*index, Kind::Text, delta)?,
            StreamEvent::ThinkingDelta { index, delta } => self.delta(*index, Kind::Thinking, delta)?,
            StreamEvent::ToolCallDelta { index, delta, .. } => self.delta(*index, Kind::ToolCall, delta)?,
            StreamEvent::TextEnd { index, content } => {
                let deltas = self.end(*index, Kind::Text)?;
                if &deltas != content {
                    return Err(self.violation(format!("text end of block {index} differs from its deltas")));
                }
                self.closed.push(ContentBlock::Text { text: content.clone() });
            }
            StreamEvent::ThinkingEnd { index, thinking, signature, redacted } => {
                let deltas = self.end(*index, Kind::Thinking)?;
                if &deltas != thinking {
                    return Err(self.violation(format!("thinking end of block {index} differs from its deltas")));
                }
                self.closed.push(ContentBlock::Thinking {
                    thinking: thinking.clone(),
                    signature: signature.clone(),
                    redacted: *redacted,
                });
            }
            StreamEvent::ToolCallEnd { index, id, name, arguments } => {
                let deltas = self.end(*index, Kind::ToolCall)?;
                if id.is_empty() {
                    return Err(self.violation(format!("tool call {index} ends without an id")));
                }
                if *arguments != crate::assemble::parse_arguments(&deltas) {
                    return Err(self.violation(format!("tool call {index} arguments differ from its deltas")));
                }
                self.closed.push(ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
            }
            StreamEvent::Hosted { index, provider, block } => {
                if let Some(open) = &self.open {
                    return Err(self.violation(format!("hosted block {index} while block {} is open", open.index)));
                }
                if self.last_index.is_some_and(|last| *index <= last) {
                    return Err(self.violation(format!("hosted block {index} does not follow the last index")));
                }
                self.last_index = Some(*index);
                self.closed.push(ContentBlock::Hosted { provider: provider.clone(), block: block.clone() });
            }
            StreamEvent::Reset { .. } => {
                self.open = None;
                self.last_index = None;
                self.closed.clear();
            }
            StreamEvent::Done(terminal) => {
                self.terminated = true;
                if let Some(open) = &self.open {
                    return Err(self.violation(format!("Done while block {} is open", open.index)));
                }
                if terminal.error.is_some() {
                    return Err(self.violation("Done carries an error"));
                }
                if matches!(terminal.stop_reason, StopReason::Error | StopReason::Aborted) {
                    return Err(self.violation(format!("Done with stop reason {}", terminal.stop_reason.as_str())));
                }
                self.check_terminal_content(&terminal.message.content)?;
            }
            StreamEvent::Error(terminal) => {
                self.terminated = true;
                if terminal.error.is_none() {
                    return Err(self.violation("Error terminal without an error"));
                }
                if !matches!(terminal.stop_reason, StopReason::Error | StopReason::Aborted) {
                    return Err(self.violation(format!("Error with stop reason {}", terminal.stop_reason.as_str())));
                }
                self.check_terminal_content(&terminal.message.content)?;
            }
        }
        Ok(())
    }

    fn check_terminal_content(&self, content: &[ContentBlock]) -> Result<(), AlgebraViolation> {
        if content != self.closed.as_slice() {
            return Err(self.violation(format!(
                "the terminal's message has {} blocks, not the {} closed ones",
                content.len(),
                self.closed.len()
            )));
        }
        Ok(())
    }

    /// Checks that the stream ended properly (a terminal was seen).
    pub fn finish(&self) -> Result<(), AlgebraViolation> {
        if !self.terminated {
            return Err(self.violation("the stream ended without a terminal"));
        }
        Ok(())
    }
}

/// Checks a whole stream.
pub fn validate<'a>(events: impl IntoIterator<Item = &'a StreamEvent>) -> Result<(), AlgebraViolation> {
    let mut validator = Validator::new();
    for event in events {
        validator.push(event)?;
    }
    validator.finish()
}

//! What `superpi run` writes for scripts: `--output-format json` (one result object per turn)
//! and `stream-json` (one kernel event per line, in the kernel protocol's wire form), and what
//! `--input-format stream-json` reads (one prompt per line). Pure: tested without a kernel.

use clap::ValueEnum;
use serde::Deserialize;
use serde_json::{Value, json};
use superpi_proto::{ContentBlock, Event, EventBody, Role, Usage};

/// How `superpi run` writes a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    /// The answer on stdout, activity on stderr.
    #[default]
    Text,
    /// One JSON result object per prompt on stdout, when its turn ends.
    Json,
    /// Every kernel event of the turn, one JSON object per line, as it happens.
    StreamJson,
}

/// How `superpi run` reads its prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum InputFormat {
    /// One prompt: the argument, or all of stdin.
    #[default]
    Text,
    /// One prompt per stdin line, `{"prompt": "..."}`, each a turn of one conversation.
    StreamJson,
}

/// One line of `--input-format stream-json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputLine {
    prompt: String,
}

/// The prompt of one input line, or why the line is not one.
pub fn parse_input_line(line: &str) -> Result<String, String> {
    let parsed: InputLine =
        serde_json::from_str(line).map_err(|err| format!("not a {{\"prompt\": \"...\"}} line: {err}"))?;
    if parsed.prompt.trim().is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(parsed.prompt)
}

/// The result line of an input line that was not a prompt.
pub fn invalid_input(error: &str) -> Value {
    json!({"type": "result", "status": "invalid_input", "is_error": true, "error": error})
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    Completed,
    Failed,
    Cancelled,
}

impl TurnEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnEnd::Completed => "completed",
            TurnEnd::Failed => "failed",
            TurnEnd::Cancelled => "cancelled",
        }
    }

    /// The end an event marks, when it is a turn's last event.
    pub fn of(event: &Event) -> Option<TurnEnd> {
        match event.body {
            EventBody::TurnCompleted { .. } => Some(TurnEnd::Completed),
            EventBody::TurnError { .. } => Some(TurnEnd::Failed),
            EventBody::TurnCancelled {} => Some(TurnEnd::Cancelled),
            _ => None,
        }
    }
}

/// One turn's events folded into the object `--output-format json` prints.
#[derive(Debug)]
pub struct TurnResult {
    conversation_id: i64,
    turn_id: i64,
    /// The text of each assistant message, in order.
    texts: Vec<String>,
    end: Option<TurnEnd>,
    stop_reason: Option<String>,
    error: Option<String>,
    /// Token totals from `usage_updated`, else from the messages' own usage.
    usage: Usage,
    message_usage: Usage,
    saw_usage_updated: bool,
    /// The turn's and the conversation's cost so far, from the last `usage_updated` priced.
    cost: (Option<f64>, Option<f64>),
    tool_calls: u64,
    /// The turn was held to an output schema: its `result` is the end's, the accepted JSON.
    structured: bool,
    answer: Option<String>,
}

impl TurnResult {
    pub fn new(conversation_id: i64, turn_id: i64) -> Self {
        TurnResult {
            conversation_id,
            turn_id,
            texts: Vec::new(),
            end: None,
            stop_reason: None,
            error: None,
            usage: Usage::default(),
            message_usage: Usage::default(),
            saw_usage_updated: false,
            cost: (None, None),
            tool_calls: 0,
            structured: false,
            answer: None,
        }
    }

    /// A turn held to an output schema: the result is its accepted answer, also parsed as
    /// `structured_output` (null when the turn did not complete).
    pub fn structured(mut self, structured: bool) -> Self {
        self.structured = structured;
        self
    }

    /// Takes one event (events of other turns are ignored).
    pub fn take(&mut self, event: &Event) {
        if event.turn_id != Some(self.turn_id) {
            return;
        }
        self.end = self.end.or(TurnEnd::of(event));
        match &event.body {
            EventBody::MessageCompleted { role: Role::Assistant, content, usage } => {
                let text: String = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                if !text.is_empty() {
                    self.texts.push(text);
                }
                if let Some(usage) = usage {
                    self.message_usage.add(*usage);
                }
            }
            EventBody::UsageUpdated {
                input_tokens,
                output_tokens,
                cached_input_tokens,
                turn_cost_usd,
                total_cost_usd,
                ..
            } => {
                self.saw_usage_updated = true;
                let (input_tokens, output_tokens, cached_input_tokens) =
                    (*input_tokens, *output_tokens, *cached_input_tokens);
                self.usage.add(Usage { input_tokens, output_tokens, cached_input_tokens, cache_write_tokens: 0 });
                if turn_cost_usd.is_some() {
                    self.cost = (*turn_cost_usd, *total_cost_usd);
                }
            }
            EventBody::ToolStarted { .. } => self.tool_calls += 1,
            EventBody::TurnCompleted { stop_reason, result } => {
                self.stop_reason = Some(stop_reason.clone());
                self.answer = result.clone();
            }
            EventBody::TurnError { error } => self.error = Some(error.clone()),
            _ => {}
        }
    }

    pub fn end(&self) -> Option<TurnEnd> {
        self.end
    }

    /// The result object: `status` is `completed`, `failed` or `cancelled` (`running` before
    /// the turn ended), `result` the answer text (the assistant messages' text, a blank line
    /// between messages).
    pub fn to_json(&self) -> Value {
        let usage = if self.saw_usage_updated { self.usage } else { self.message_usage };
        let mut out = json!({
            "type": "result",
            "status": self.end.map_or("running", TurnEnd::as_str),
            "is_error": self.end != Some(TurnEnd::Completed),
            "conversation_id": self.conversation_id,
            "turn_id": self.turn_id,
            "result": self.texts.join("\n\n"),
            "stop_reason": self.stop_reason,
            "error": self.error,
            "tool_calls": self.tool_calls,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                      "cached_input_tokens": usage.cached_input_tokens},
            "cost_usd": self.cost.0,
            "total_cost_usd": self.cost.1,
        });
        if self.structured {
            let answer = self.answer.as_deref().filter(|_| self.end == Some(TurnEnd::Completed));
            out["result"] = json!(answer.unwrap_or_default());
            out["structured_output"] = answer.and_then(|a| serde_json::from_str(a).ok()).unwrap_or(Value::Null);
        }
        out
    }
}

/// One `stream-json` line: the event in the kernel protocol's wire form (kernel/PROTOCOL.md).
pub fn event_line(event: &Event) -> String {
    event.to_json()
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;

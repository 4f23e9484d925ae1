//! Codex (`codex`, npm `@openai/codex`): `codex exec --json` prints one JSON event a line
//! (`thread.started`, `turn.started`, `item.started`/`item.updated`/`item.completed` of agent
//! messages, reasoning, command executions, file changes, MCP tool calls and web searches,
//! `turn.completed` with usage, `turn.failed`, `error`).
//!
//! The translator is a pure function of the bytes. Exec mode streams no deltas: a message or
//! reasoning item arrives whole, and is passed on as one delta and its completed message. The
//! items Codex ran become tool calls and results under names of their kind (`shell`,
//! `apply_patch`, `mcp__SERVER__TOOL`, `web_search`).

use std::collections::HashSet;

use serde_json::{Value, json};
use superpi_proto::{ContentBlock, Usage};

use crate::event::BackendEvent;
use crate::lines::{Line, Lines};

/// Codex's `codex exec --json` output, translated.
#[derive(Debug, Default)]
pub struct Translator {
    lines: Lines,
    /// Items already announced as tool calls.
    started: HashSet<String>,
    /// The last agent message: the turn's result.
    last_text: String,
    ended: bool,
}

impl Translator {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<BackendEvent> {
        let lines = self.lines.push(bytes);
        self.translate(lines)
    }

    pub fn finish(&mut self) -> Vec<BackendEvent> {
        let lines = self.lines.finish();
        self.translate(lines)
    }

    /// Whether the turn's end (`turn.completed` or `turn.failed`) came.
    pub fn ended(&self) -> bool {
        self.ended
    }

    fn translate(&mut self, lines: Vec<Line>) -> Vec<BackendEvent> {
        let mut out = Vec::new();
        for line in lines {
            match line {
                Line::Json(value) => self.line(&value, &mut out),
                Line::Text(text) => out.push(BackendEvent::Notice {
                    level: "info",
                    message: format!("codex: {}", text.chars().take(500).collect::<String>()),
                }),
                Line::TooLong(bytes) => out.push(BackendEvent::Notice {
                    level: "warning",
                    message: format!("codex wrote a line of {bytes} bytes; it was skipped"),
                }),
            }
        }
        out
    }

    fn line(&mut self, line: &Value, out: &mut Vec<BackendEvent>) {
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match line.get("type").and_then(Value::as_str).unwrap_or("") {
            "thread.started" => out.push(BackendEvent::Session { id: text(line, "thread_id") }),
            "item.started" | "item.updated" => {
                if let Some(item) = line.get("item") {
                    self.announce(item, out);
                }
            }
            "item.completed" => {
                if let Some(item) = line.get("item") {
                    self.completed(item, out);
                }
            }
            "turn.completed" => {
                self.ended = true;
                let u = |k: &str| line.pointer(&format!("/usage/{k}")).and_then(Value::as_u64).unwrap_or(0);
                out.push(BackendEvent::End {
                    result: std::mem::take(&mut self.last_text),
                    stop_reason: "end_turn".into(),
                    usage: Usage { input_tokens: u("input_tokens"), output_tokens: u("output_tokens") },
                });
            }
            "turn.failed" => {
                self.ended = true;
                let message = line.pointer("/error/message").and_then(Value::as_str).unwrap_or("Codex failed the turn");
                out.push(BackendEvent::Failed { message: message.to_string() });
            }
            "error" => out.push(BackendEvent::Notice { level: "error", message: text(line, "message") }),
            _ => {}
        }
    }

    /// The tool call an item stands for, announced once.
    fn announce(&mut self, item: &Value, out: &mut Vec<BackendEvent>) {
        let Some((name, arguments)) = tool_call(item) else { return };
        let id = item.get("id").and_then(Value::as_str).unwrap_or("").to_string();
        if self.started.insert(id.clone()) {
            out.push(BackendEvent::Message { content: vec![ContentBlock::ToolCall { id, name, arguments }] });
        }
    }

    fn completed(&mut self, item: &Value, out: &mut Vec<BackendEvent>) {
        let text = item.get("text").and_then(Value::as_str).unwrap_or("").to_string();
        match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "agent_message" => {
                out.push(BackendEvent::TextDelta { index: 0, delta: text.clone() });
                out.push(BackendEvent::Message { content: vec![ContentBlock::Text { text: text.clone() }] });
                self.last_text = text;
            }
            "reasoning" => {
                out.push(BackendEvent::ThinkingDelta { index: 0, delta: text.clone() });
                let thinking = ContentBlock::Thinking { thinking: text, signature: None, redacted: false };
                out.push(BackendEvent::Message { content: vec![thinking] });
            }
            "error" => out.push(BackendEvent::Notice { level: "warning", message: text_of(item, "message") }),
            _ => {
                if tool_call(item).is_none() {
                    return;
                }
                self.announce(item, out);
                let (output, is_error) = tool_result(item);
                let tool_call_id = item.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                out.push(BackendEvent::ToolResult { tool_call_id, output, is_error });
            }
        }
    }
}

fn text_of(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The name and arguments of an item Codex ran.
fn tool_call(item: &Value) -> Option<(String, Value)> {
    let field = |k: &str| item.get(k).cloned().unwrap_or(Value::Null);
    Some(match item.get("type").and_then(Value::as_str)? {
        "command_execution" => ("shell".into(), json!({"command": field("command")})),
        "file_change" => ("apply_patch".into(), json!({"changes": field("changes")})),
        "mcp_tool_call" => (format!("mcp__{}__{}", text_of(item, "server"), text_of(item, "tool")), field("arguments")),
        "web_search" => ("web_search".into(), json!({"query": field("query")})),
        _ => return None,
    })
}

/// What an item Codex ran produced, and whether it failed.
fn tool_result(item: &Value) -> (String, bool) {
    let status = item.get("status").and_then(Value::as_str).unwrap_or("");
    let failed = matches!(status, "failed" | "declined");
    match item.get("type").and_then(Value::as_str).unwrap_or("") {
        "command_execution" => {
            let exit = item.get("exit_code").and_then(Value::as_i64);
            (text_of(item, "aggregated_output"), failed || exit.is_some_and(|c| c != 0))
        }
        "file_change" => {
            let changes = item.get("changes").and_then(Value::as_array).into_iter().flatten();
            let lines: Vec<String> =
                changes.map(|c| format!("{} {}", text_of(c, "kind"), text_of(c, "path"))).collect();
            (lines.join("\n"), failed)
        }
        "mcp_tool_call" => match item.get("error").filter(|e| !e.is_null()) {
            Some(error) => (error.get("message").and_then(Value::as_str).unwrap_or("failed").to_string(), true),
            None => (item.get("result").map(Value::to_string).unwrap_or_default(), failed),
        },
        _ => (String::new(), failed),
    }
}

#[cfg(test)]
#[path = "codex_tests.rs"]
mod tests;

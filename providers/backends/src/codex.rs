//! Codex (`codex`, npm `@openai/codex`): `codex exec --json` prints one JSON event a line
//! (`thread.started`, `turn.started`, `item.started`/`item.updated`/`item.completed` of agent
//! messages, reasoning, command executions, file changes, MCP tool calls and web searches,
//! `turn.completed` with usage, `turn.failed`, `error`).
//!
//! Driven: `codex exec --json --skip-git-repo-check --sandbox S [-m MODEL] -` with the prompt
//! on stdin (then closed), `codex exec ... resume THREAD -` for a stored thread. Exec mode asks
//! no approvals: Codex's own sandbox, chosen from the mode, is the whole policy (see
//! [`sandbox_mode`]).
//!
//! The translator is a pure function of the bytes. Exec mode streams no deltas: a message or
//! reasoning item arrives whole, and is passed on as one delta and its completed message. The
//! items Codex ran become tool calls and results under names of their kind (`shell`,
//! `apply_patch`, `mcp__SERVER__TOOL`, `web_search`).

use std::collections::HashSet;

use serde_json::{Value, json};
use superpi_policy::Mode;
use superpi_proto::{ContentBlock, Usage};

use crate::event::BackendEvent;
use crate::lines::{LineTranslator, Translating};

/// The command line of one turn. `base_url` (the kernel's `OPENAI_BASE_URL`) becomes a model
/// provider of its own speaking the Responses API with `OPENAI_API_KEY`: Codex's built-in
/// OpenAI provider ignores that variable.
pub fn args(
    mode: Mode,
    confined: bool,
    model: Option<&str>,
    base_url: Option<&str>,
    resume: Option<&str>,
) -> Vec<String> {
    let mut args: Vec<String> = ["exec", "--json", "--skip-git-repo-check", "--sandbox", sandbox_mode(mode, confined)]
        .into_iter()
        .map(String::from)
        .collect();
    if let Some(url) = base_url {
        let provider = format!(
            "model_providers.superpi={{name={},base_url={},env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}}",
            toml_string("OpenAI-compatible (OPENAI_BASE_URL)"),
            toml_string(url)
        );
        args.extend(["-c".into(), "model_provider=\"superpi\"".into(), "-c".into(), provider]);
    }
    if let Some(model) = model {
        args.extend(["-m".into(), model.to_string()]);
    }
    if let Some(thread) = resume {
        args.extend(["resume".into(), thread.to_string()]);
    }
    // The prompt comes on stdin.
    args.push("-".into());
    args
}

/// Codex's own sandbox for a superpi mode. Codex's sandbox is bubblewrap, which needs the
/// namespaces superpi's confinement refuses: inside it, a sandboxed command cannot start. So
/// where superpi confines Codex, `accept-edits` and `auto` run unrestricted by Codex (superpi's
/// confinement, the workspace the one writable place, holds the program and its commands) and
/// `plan` stays `read-only` (no command runs: it fails closed). Unconfined, Codex's sandbox is
/// the only one: `read-only` for `plan`, else `workspace-write`. Exec mode never asks.
pub fn sandbox_mode(mode: Mode, confined: bool) -> &'static str {
    match mode {
        Mode::Plan => "read-only",
        Mode::AcceptEdits | Mode::Auto if confined => "danger-full-access",
        Mode::AcceptEdits | Mode::Auto => "workspace-write",
    }
}

/// The variables of the kernel's environment Codex gets besides the sandbox's allow list.
/// `OPENAI_BASE_URL` is read by superpi (see [`args`]).
pub const ENV_KEYS: &[&str] =
    &["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY", "OPENAI_ORGANIZATION", "OPENAI_PROJECT"];

/// Variables superpi sets: its state directory as Codex's home (the user's own `~/.codex`
/// login and configuration stay out of reach).
pub fn fixed_env(state_dir: &str) -> Vec<(String, String)> {
    vec![("HOME".into(), state_dir.into()), ("CODEX_HOME".into(), state_dir.into())]
}

fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// Codex's `codex exec --json` output, translated.
pub type Translator = Translating<Stream>;

/// What Codex's output said so far.
#[derive(Debug, Default)]
pub struct Stream {
    /// Items already announced as tool calls.
    started: HashSet<String>,
    /// The last agent message: the turn's result.
    last_text: String,
    ended: bool,
}

impl LineTranslator for Stream {
    const PROGRAM: &'static str = "codex";

    /// Whether the turn's end (`turn.completed` or `turn.failed`) came.
    fn ended(&self) -> bool {
        self.ended
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
}

impl Stream {
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

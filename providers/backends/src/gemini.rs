//! Gemini CLI (`gemini`, npm `@google/gemini-cli`): headless mode, the prompt on stdin and
//! newline-delimited JSON on stdout (`--output-format stream-json`). Its events
//! (`packages/core/src/output/types.ts` of gemini-cli): `init` (the session id and model),
//! `message` (the user's prompt; the answer's text as deltas), `tool_use` (a call the CLI is
//! about to run), `tool_result` (what it produced, `success` or `error`), `error` (a warning
//! or error that does not end the turn) and `result` (the end: `success` with the turn's
//! token counts, or `error` with the reason).
//!
//! Headless Gemini CLI asks nobody: a tool its approval mode does not allow outright is not
//! offered to the model at all (a call to it fails "not found"). So superpi's mode chooses
//! the approval mode, and nothing becomes a question (see [`approval_mode`]).
//!
//! The translator is a pure function of the bytes.

use serde_json::{Value, json};
use superpi_policy::Mode;
use superpi_proto::{ContentBlock, Usage};

use crate::event::BackendEvent;
use crate::lines::{LineTranslator, Translating};

/// The command line of one turn: `model` is asked for (else the CLI routes between its own),
/// `resume` continues the backend's session (`--resume UUID`; the sessions are kept per
/// workspace under the program's home).
pub fn args(mode: Mode, model: Option<&str>, resume: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = ["--output-format", "stream-json", "--approval-mode", approval_mode(mode)]
        .into_iter()
        .map(String::from)
        .collect();
    // The workspace is the conversation's: superpi decided it may be worked in. Without this
    // an untrusted folder ends headless mode at once.
    args.push("--skip-trust".into());
    if let Some(model) = model {
        args.extend(["--model".into(), model.to_string()]);
    }
    if let Some(session) = resume {
        args.extend(["--resume".into(), session.to_string()]);
    }
    args
}

/// Gemini CLI's approval mode for a superpi mode. `plan` is its read-only mode (writes only
/// its own plan files); `accept-edits` its `auto_edit` (file edits run, shell commands are not
/// offered, since headless it cannot ask: fails closed); `auto` its `yolo` (everything runs,
/// inside superpi's confinement when the sandbox is on).
pub fn approval_mode(mode: Mode) -> &'static str {
    match mode {
        Mode::Plan => "plan",
        Mode::AcceptEdits => "auto_edit",
        Mode::Auto => "yolo",
    }
}

/// The variables of the kernel's environment Gemini CLI gets besides the sandbox's allow
/// list: its keys, endpoints and model choice. The kernel's `GEMINI_BASE_URL` (superpi's own
/// Gemini provider's) becomes `GOOGLE_GEMINI_BASE_URL` (see [`fixed_env`]).
pub const ENV_KEYS: &[&str] = &[
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_MODEL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_VERTEX_BASE_URL",
];

/// Variables superpi sets: its state directory as the CLI's home (the user's own `~/.gemini`
/// login and settings stay out of reach), no telemetry, and the endpoint superpi's Gemini
/// provider uses when the kernel names one for it only.
pub fn fixed_env(state_dir: &str, env: &[(String, String)]) -> Vec<(String, String)> {
    let mut fixed = vec![
        ("HOME".to_string(), state_dir.to_string()),
        ("GEMINI_CLI_HOME".to_string(), state_dir.to_string()),
        ("GEMINI_TELEMETRY_ENABLED".to_string(), "false".to_string()),
    ];
    let given = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    if given("GOOGLE_GEMINI_BASE_URL").is_none()
        && let Some(url) = given("GEMINI_BASE_URL")
    {
        fixed.push(("GOOGLE_GEMINI_BASE_URL".to_string(), url));
    }
    fixed
}

/// The user settings superpi writes into the CLI's home before each turn: how it
/// authenticates (headless it refuses to choose: "Invalid auth method selected" for a base
/// URL alone), and no usage statistics or self-update.
pub fn settings(env: &[(String, String)]) -> Value {
    let given = |key: &str| env.iter().any(|(k, v)| k == key && !v.is_empty());
    let vertex = env.iter().any(|(k, v)| k == "GOOGLE_GENAI_USE_VERTEXAI" && v == "true");
    let auth = if vertex {
        json!({"selectedType": "vertex-ai"})
    } else if given("GEMINI_API_KEY") {
        json!({"selectedType": "gemini-api-key"})
    } else {
        json!({})
    };
    json!({
        "security": {"auth": auth},
        "privacy": {"usageStatisticsEnabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
    })
}

/// Gemini CLI's output, translated.
pub type Translator = Translating<Stream>;

/// What Gemini CLI's output said so far.
#[derive(Debug, Default)]
pub struct Stream {
    /// Answer text since the last tool call, completed into a message before the next call
    /// or the end.
    text: String,
    /// The last text: the turn's result.
    last_text: String,
    ended: bool,
}

impl LineTranslator for Stream {
    const PROGRAM: &'static str = "gemini";

    fn ended(&self) -> bool {
        self.ended
    }

    fn line(&mut self, line: &Value, out: &mut Vec<BackendEvent>) {
        let text = |k: &str| line.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match line.get("type").and_then(Value::as_str).unwrap_or("") {
            "init" => {
                let id = text("session_id");
                if !id.is_empty() {
                    out.push(BackendEvent::Session { id });
                }
            }
            "message" if text("role") == "assistant" => {
                let delta = text("content");
                self.text.push_str(&delta);
                out.push(BackendEvent::TextDelta { index: 0, delta });
            }
            "tool_use" => {
                let call = ContentBlock::ToolCall {
                    id: text("tool_id"),
                    name: text("tool_name"),
                    arguments: line.get("parameters").cloned().unwrap_or_else(|| json!({})),
                };
                let mut content = self.take_text();
                content.push(call);
                out.push(BackendEvent::Message { content });
            }
            "tool_result" => {
                // A failed call's error says more than its display text ("File not found.").
                let is_error = text("status") == "error";
                let error = line.pointer("/error/message").and_then(Value::as_str).filter(|_| is_error);
                let output = error.map_or_else(|| text("output"), str::to_string);
                out.push(BackendEvent::ToolResult { tool_call_id: text("tool_id"), output, is_error });
            }
            "error" => {
                let level = if text("severity") == "error" { "error" } else { "warning" };
                out.push(BackendEvent::Notice { level, message: format!("Gemini CLI: {}", text("message")) });
            }
            "result" => self.result(line, out),
            _ => {}
        }
    }
}

impl Stream {
    /// The text written since the last call, as a message's block.
    fn take_text(&mut self) -> Vec<ContentBlock> {
        if self.text.is_empty() {
            return Vec::new();
        }
        self.last_text = std::mem::take(&mut self.text);
        vec![ContentBlock::Text { text: self.last_text.clone() }]
    }

    fn result(&mut self, line: &Value, out: &mut Vec<BackendEvent>) {
        self.ended = true;
        let content = self.take_text();
        if !content.is_empty() {
            out.push(BackendEvent::Message { content });
        }
        if line.get("status").and_then(Value::as_str) == Some("success") {
            let count = |k: &str| line.pointer(&format!("/stats/{k}")).and_then(Value::as_u64).unwrap_or(0);
            let usage = Usage { input_tokens: count("input_tokens"), output_tokens: count("output_tokens") };
            let result = std::mem::take(&mut self.last_text);
            out.push(BackendEvent::End { result, stop_reason: "end_turn".into(), usage });
        } else {
            let message = line.pointer("/error/message").and_then(Value::as_str).unwrap_or("the turn failed");
            out.push(BackendEvent::Failed { message: format!("Gemini CLI: {message}") });
        }
    }
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;

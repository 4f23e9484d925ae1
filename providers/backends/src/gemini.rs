//! Gemini CLI (`gemini`, npm `@google/gemini-cli`): headless mode, the prompt on stdin and
//! newline-delimited JSON on stdout (`--output-format stream-json`). Its events
//! (`packages/core/src/output/types.ts` of gemini-cli): `init` (the session id and model),
//! `message` (the user's prompt; the answer's text as deltas), `tool_use` (a call the CLI is
//! about to run), `tool_result` (what it produced, `success` or `error`), `error` (a warning
//! or error that does not end the turn) and `result` (the end: `success` with the turn's
//! token counts, or `error` with the reason).
//!
//! Headless Gemini CLI asks nobody itself: a tool its approval mode does not allow outright is
//! not offered to the model at all (a call to it fails "not found"). So in `accept-edits` it
//! runs in `yolo` with superpi's `BeforeTool` hook in its settings ([`settings`]): every call
//! but reads and edits runs the hook, which hands the call to superpi and waits for its answer
//! (the channel is `gemini_ask`'s); refused, the CLI reports the call blocked with superpi's
//! reason, which the model reads. See [`approval_mode`].
//!
//! The translator is a pure function of the bytes.

use serde_json::{Value, json};
use superpi_policy::Mode;
use superpi_proto::{ContentBlock, Effort, Usage};

use crate::event::{ApprovalRequest, BackendEvent};
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
/// its own plan files); `accept-edits` and `auto` its `yolo` (every tool offered, inside
/// superpi's confinement when the sandbox is on), where in `accept-edits` superpi's hook asks
/// about each call but reads and edits ([`asks_about`]; the driver sets [`ASK_DIR_VAR`] only
/// then). Its own `auto_edit` would not offer the shell at all: headless it cannot ask.
pub fn approval_mode(mode: Mode) -> &'static str {
    match mode {
        Mode::Plan => "plan",
        Mode::AcceptEdits | Mode::Auto => "yolo",
    }
}

/// Whether superpi asks about a turn's calls in `mode` (through its hook).
pub fn asks_about(mode: Mode) -> bool {
    mode == Mode::AcceptEdits
}

/// The variable naming the directory of a turn's questions; the hook asks nothing without it.
pub const ASK_DIR_VAR: &str = "SUPERPI_ASK_DIR";

/// Gemini CLI's tools that run without a question in `accept-edits`: reading, searching,
/// file edits and its todo list. Every other tool (the shell, web fetches, MCP tools,
/// subagents, and any tool a later version adds) is asked about.
pub const RUN_WITHOUT_ASKING: &[&str] = &[
    "read_file",
    "read_many_files",
    "list_directory",
    "glob",
    "grep_search",
    "search_file_content",
    "google_web_search",
    "write_file",
    "replace",
    "write_todos",
];

/// The hook (`sh -c`): without [`ASK_DIR_VAR`] it lets the call run (output nothing). Else it
/// writes the call (its JSON on stdin) into a new directory `ask.XXXXXXXX` there with a FIFO
/// for the answer, names that directory on the driver's FIFO `requests`, and prints the one
/// line of answer (`{"decision": ...}`). When any step fails it refuses the call.
pub const ASK_HOOK: &str = r#"[ -n "$SUPERPI_ASK_DIR" ] || exit 0
d=$(mktemp -d "$SUPERPI_ASK_DIR/ask.XXXXXXXX") && cat > "$d/request" && mkfifo "$d/answer" && exec 3<>"$d/answer" && printf '%s\n' "$d" > "$SUPERPI_ASK_DIR/requests" && IFS= read -r a <&3 && printf '%s\n' "$a" && exit 0
printf '%s\n' '{"decision":"deny","reason":"superpi could not ask about this call, so it is refused"}'"#;

/// How long the CLI waits for the hook: longer than any question (superpi answers, or
/// refuses at its own question timeout; a hook that timed out would let the call run).
const ASK_HOOK_TIMEOUT_MS: u64 = 7 * 24 * 3600 * 1000;

/// The hook's matcher (a JavaScript regular expression over the tool's name): every tool but
/// those of [`RUN_WITHOUT_ASKING`].
fn ask_matcher() -> String {
    format!("^(?!({})$)", RUN_WITHOUT_ASKING.join("|"))
}

/// A new name for the hook, one per turn (`superpi-ask-` and 32 random hex digits). Gemini
/// CLI names a hook by its `name` in `hooksConfig.disabled`, which workspace settings extend;
/// a name nobody knows before the turn cannot be listed there. (Workspace settings the user
/// has not accepted stop the turn before it starts: `superpi_policy::backend_files`.)
pub fn hook_name() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("a name for Gemini CLI's hook: {e}"))?;
    Ok(format!("superpi-ask-{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// The hook's answer to a question.
pub fn hook_answer(approval: &crate::event::Approval) -> String {
    let answer = match approval {
        crate::event::Approval::Allow => json!({"decision": "allow"}),
        crate::event::Approval::Deny { message } => json!({"decision": "deny", "reason": message}),
    };
    format!("{answer}\n")
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
/// URL alone), no usage statistics or self-update, no variables from the workspace's `.env`
/// (the project's, not the CLI's), and the question hook under this turn's `hook_name`.
pub fn settings(env: &[(String, String)], thinking: Option<(&str, Effort)>, hook_name: &str) -> Value {
    let given = |key: &str| env.iter().any(|(k, v)| k == key && !v.is_empty());
    let vertex = env.iter().any(|(k, v)| k == "GOOGLE_GENAI_USE_VERTEXAI" && v == "true");
    let auth = if vertex {
        json!({"selectedType": "vertex-ai"})
    } else if given("GEMINI_API_KEY") {
        json!({"selectedType": "gemini-api-key"})
    } else {
        json!({})
    };
    let hook = json!({"type": "command", "name": hook_name, "command": ASK_HOOK, "timeout": ASK_HOOK_TIMEOUT_MS});
    let mut settings = json!({
        "security": {"auth": auth},
        "privacy": {"usageStatisticsEnabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "advanced": {"ignoreLocalEnv": true},
        "hooksConfig": {"enabled": true},
        "hooks": {"BeforeTool": [{"matcher": ask_matcher(), "hooks": [hook]}]},
    });
    // The conversation's effort, as superpi's own Gemini requests carry it, for the model
    // asked for (an override of Gemini CLI's model configs; its other requests keep theirs).
    if let Some((model, effort)) = thinking
        && let Some(config) = superpi_providers::gemini::thinking_config_for(model, effort)
    {
        let matched = json!({"match": {"model": model},
            "modelConfig": {"generateContentConfig": {"thinkingConfig": config}}});
        settings["modelConfigs"] = json!({"customOverrides": [matched]});
    }
    settings
}

/// Gemini CLI's output, translated.
pub type Translator = Translating<Stream>;

/// What Gemini CLI's output said so far.
#[derive(Debug, Default)]
pub struct Stream {
    /// Calls announced whose result has not come: a question is about one of them.
    running: Vec<(String, String, Value)>,
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
                let arguments = line.get("parameters").cloned().unwrap_or_else(|| json!({}));
                self.running.push((text("tool_id"), text("tool_name"), arguments.clone()));
                let call = ContentBlock::ToolCall { id: text("tool_id"), name: text("tool_name"), arguments };
                let mut content = self.take_text();
                content.push(call);
                out.push(BackendEvent::Message { content });
            }
            "tool_result" => {
                // A failed call's error says more than its display text ("File not found.").
                let is_error = text("status") == "error";
                let error = line.pointer("/error/message").and_then(Value::as_str).filter(|_| is_error);
                let output = error.map_or_else(|| text("output"), str::to_string);
                self.running.retain(|(id, ..)| *id != text("tool_id"));
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

    /// A call asked about through superpi's hook (`{tool_name, tool_input, ...}`), which
    /// names no call id: it is the oldest running call of that name and input.
    fn ask(&mut self, id: String, request: &Value, out: &mut Vec<BackendEvent>) {
        let tool_name = request.get("tool_name").and_then(Value::as_str).unwrap_or("").to_string();
        let input = request.get("tool_input").cloned().unwrap_or_else(|| json!({}));
        let tool_call_id =
            self.running.iter().find(|(_, name, args)| *name == tool_name && *args == input).map(|(id, ..)| id.clone());
        out.push(BackendEvent::ApprovalRequest(ApprovalRequest {
            id,
            reason: Some(format!("Gemini CLI asks to run {tool_name}")),
            tool_name,
            input,
            tool_call_id,
        }));
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
            let usage = Usage {
                input_tokens: count("input_tokens"),
                output_tokens: count("output_tokens"),
                cached_input_tokens: count("cached"),
                cache_write_tokens: 0,
            };
            let result = std::mem::take(&mut self.last_text);
            out.push(BackendEvent::End { result, stop_reason: "end_turn".into(), usage, cost_usd: None });
        } else {
            let message = line.pointer("/error/message").and_then(Value::as_str).unwrap_or("the turn failed");
            out.push(BackendEvent::Failed { message: format!("Gemini CLI: {message}") });
        }
    }
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;

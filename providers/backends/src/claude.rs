//! Claude Code (`claude`, npm `@anthropic-ai/claude-code`): print mode with stream-json input
//! and output (`claude -p --input-format stream-json --output-format stream-json --verbose
//! --include-partial-messages`), approvals through its SDK control protocol on stdin and
//! stdout (`--permission-prompt-tool stdio`: a `control_request` of subtype `can_use_tool`,
//! answered by a `control_response`).
//!
//! The translator is a pure function of the bytes: lines of JSON in, [`BackendEvent`]s out.
//! Only the main agent's output is translated; a subagent's (a line with a
//! `parent_tool_use_id`) stays inside the tool call that started it.

use serde_json::{Value, json};
use superpi_policy::Mode;
use superpi_proto::{ContentBlock, Effort, Usage};

use crate::event::{Approval, ApprovalRequest, BackendEvent, PromptImage};
use crate::lines::{LineTranslator, Translating};

/// The command line of one turn: `model` is asked for (else Claude Code picks its own), and
/// `effort` (else Claude Code's own), `resume` continues the backend's session.
pub fn args(
    mode: Mode,
    bypass_allowed: bool,
    model: Option<&str>,
    effort: Option<Effort>,
    resume: Option<&str>,
) -> Vec<String> {
    let mut args: Vec<String> = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
        "--permission-mode",
        permission_mode(mode, bypass_allowed),
    ]
    .into_iter()
    .map(String::from)
    .collect();
    // Claude Code's own command sandbox (bubblewrap) needs namespaces, which superpi's
    // confinement refuses; superpi's confinement is the sandbox of the whole program.
    args.extend(["--settings".into(), json!({"sandbox": {"enabled": false}}).to_string()]);
    // Its settings from the (private) user home only: the workspace's `.claude/settings*.json`
    // is a file the agent's own tool calls can write, and its `permissions.allow` would answer
    // calls before superpi is asked (its hooks would run commands of its choosing).
    args.extend(["--setting-sources".into(), "user".into()]);
    if let Some(model) = model {
        args.extend(["--model".into(), model.to_string()]);
    }
    if let Some(effort) = effort {
        args.extend(["--effort".into(), effort_level(effort).to_string()]);
    }
    if let Some(session) = resume {
        args.extend(["--resume".into(), session.to_string()]);
    }
    args
}

/// Claude Code's `--effort` for a level: `off` is its least, `low`, with thinking turned off
/// (the driver sets `MAX_THINKING_TOKENS=0`).
pub fn effort_level(effort: Effort) -> &'static str {
    match effort {
        Effort::Off | Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High => "high",
    }
}

/// Claude Code's permission mode for a superpi mode. `bypassPermissions` only where superpi
/// confines the program (the caller says): otherwise `auto` asks like `accept-edits`.
pub fn permission_mode(mode: Mode, bypass_allowed: bool) -> &'static str {
    match mode {
        Mode::Plan => "plan",
        Mode::AcceptEdits => "acceptEdits",
        Mode::Auto if bypass_allowed => "bypassPermissions",
        Mode::Auto => "acceptEdits",
    }
}

/// The variables of the kernel's environment Claude Code gets besides the sandbox's allow
/// list: its keys, endpoint and model choices.
pub const ENV_KEYS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_MAX_RETRIES",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
];

/// Variables superpi sets: its state directory as Claude Code's home and configuration
/// directory (the user's own `~/.claude` stays out of reach), and no traffic but the model
/// API's (no telemetry, error reports or self-update).
pub fn fixed_env(state_dir: &str) -> Vec<(String, String)> {
    [
        ("HOME", state_dir),
        ("CLAUDE_CONFIG_DIR", state_dir),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The prompt as one stream-json input line: its text, or with images the Messages API's
/// content blocks (text, then each image as a base64 source), which Claude Code passes on.
pub fn prompt_line(text: &str, images: &[PromptImage]) -> String {
    let content = if images.is_empty() {
        json!(text)
    } else {
        let images = images.iter().map(|image| {
            json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}})
        });
        let text = (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}));
        Value::Array(text.into_iter().chain(images).collect())
    };
    let line = json!({"type": "user", "message": {"role": "user", "content": content}});
    format!("{line}\n")
}

/// The answer to an approval request as one input line; an allowed call runs with its input
/// unchanged.
pub fn approval_line(request: &ApprovalRequest, approval: &Approval) -> String {
    let response = match approval {
        Approval::Allow => json!({"behavior": "allow", "updatedInput": request.input}),
        Approval::Deny { message } => json!({"behavior": "deny", "message": message}),
    };
    control_response(json!({"subtype": "success", "request_id": request.id, "response": response}))
}

/// The refusal of a control request superpi does not serve.
pub fn refusal_line(request_id: &str, what: &str) -> String {
    control_response(
        json!({"subtype": "error", "request_id": request_id, "error": format!("superpi does not serve `{what}`")}),
    )
}

fn control_response(response: Value) -> String {
    format!("{}\n", json!({"type": "control_response", "response": response}))
}

/// The provider tag of the hosted blocks of Claude Code's own server tools.
pub const HOSTED: &str = "claude-code";

/// Claude Code's stdout, translated.
pub type Translator = Translating<Stream>;

/// What Claude Code's output said so far.
#[derive(Debug, Default)]
pub struct Stream {
    session: Option<String>,
    ended: bool,
}

impl LineTranslator for Stream {
    const PROGRAM: &'static str = "claude";

    /// Whether the turn's `result` came.
    fn ended(&self) -> bool {
        self.ended
    }

    fn line(&mut self, line: &Value, out: &mut Vec<BackendEvent>) {
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        if let Some(id) = str_of(line, "session_id")
            && self.session.as_deref() != Some(id.as_str())
        {
            self.session = Some(id.clone());
            out.push(BackendEvent::Session { id });
        }
        if line.get("parent_tool_use_id").is_some_and(|p| !p.is_null()) {
            return;
        }
        match line.get("type").and_then(Value::as_str).unwrap_or("") {
            "stream_event" => delta(line.get("event").unwrap_or(&Value::Null), out),
            "assistant" => {
                let content = line.pointer("/message/content").and_then(Value::as_array);
                let content: Vec<ContentBlock> = content.into_iter().flatten().filter_map(assistant_block).collect();
                if !content.is_empty() {
                    out.push(BackendEvent::Message { content });
                }
            }
            "user" => {
                let content = line.pointer("/message/content").and_then(Value::as_array);
                for block in content.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                        out.push(BackendEvent::ToolResult {
                            tool_call_id: str_of(block, "tool_use_id").unwrap_or_default(),
                            output: result_text(block.get("content").unwrap_or(&Value::Null)),
                            is_error: block.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                        });
                    }
                }
            }
            "control_request" => {
                let id = str_of(line, "request_id").unwrap_or_default();
                let request = line.get("request").unwrap_or(&Value::Null);
                let subtype = str_of(request, "subtype").unwrap_or_default();
                if subtype == "can_use_tool" {
                    out.push(BackendEvent::ApprovalRequest(ApprovalRequest {
                        id,
                        tool_name: str_of(request, "tool_name").unwrap_or_default(),
                        input: request.get("input").cloned().unwrap_or(Value::Object(Default::default())),
                        tool_call_id: str_of(request, "tool_use_id"),
                        reason: str_of(request, "decision_reason").or_else(|| str_of(request, "description")),
                    }));
                } else {
                    out.push(BackendEvent::Unsupported { request_id: id, what: subtype });
                }
            }
            "system" => match str_of(line, "subtype").as_deref() {
                Some("api_retry") => out.push(BackendEvent::Retrying {
                    attempt: line.get("attempt").and_then(Value::as_u64).unwrap_or(0) as u32,
                    delay_ms: line.get("retry_delay_ms").and_then(Value::as_u64).unwrap_or(0),
                    reason: match (line.get("error_status").and_then(Value::as_u64), str_of(line, "error")) {
                        (Some(status), Some(error)) => format!("{status} {error}"),
                        (_, error) => error.unwrap_or_else(|| "the model API failed".into()),
                    },
                }),
                Some("init") | Some("status") | Some("thinking_tokens") | None => {}
                Some(_) => {}
            },
            "result" => {
                self.ended = true;
                out.push(result(line));
            }
            _ => {}
        }
    }
}

/// A partial message's delta (the API's own stream event, passed through).
fn delta(event: &Value, out: &mut Vec<BackendEvent>) {
    if event.get("type").and_then(Value::as_str) != Some("content_block_delta") {
        return;
    }
    let index = event.get("index").and_then(Value::as_u64).unwrap_or(0) as u32;
    let delta = event.get("delta").unwrap_or(&Value::Null);
    let text = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match delta.get("type").and_then(Value::as_str) {
        Some("text_delta") => out.push(BackendEvent::TextDelta { index, delta: text("text") }),
        Some("thinking_delta") => out.push(BackendEvent::ThinkingDelta { index, delta: text("thinking") }),
        _ => {}
    }
}

fn assistant_block(block: &Value) -> Option<ContentBlock> {
    let s = |k: &str| block.get(k).and_then(Value::as_str).map(str::to_string);
    match block.get("type").and_then(Value::as_str)? {
        "text" => Some(ContentBlock::Text { text: s("text")? })
            .filter(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty())),
        "thinking" => {
            Some(ContentBlock::Thinking { thinking: s("thinking")?, signature: s("signature"), redacted: false })
        }
        "redacted_thinking" => {
            Some(ContentBlock::Thinking { thinking: String::new(), signature: s("data"), redacted: true })
        }
        "tool_use" => Some(ContentBlock::ToolCall {
            id: s("id")?,
            name: s("name")?,
            arguments: block.get("input").cloned().unwrap_or(Value::Object(Default::default())),
        }),
        // Claude Code's own server tools (its web search, its tool search) and their results,
        // run by Anthropic: no call superpi runs, asks about or counts. Kept as hosted blocks
        // under a tag no wire API sends, so they never go to a model API either.
        kind if kind == "server_tool_use" || kind.ends_with("_tool_result") && kind != "tool_result" => {
            Some(ContentBlock::Hosted { provider: HOSTED.into(), block: block.clone() })
        }
        _ => None,
    }
}

/// A tool result's content: a string, or blocks whose text is joined (others described).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).unwrap_or("").to_string(),
                Some(other) => format!("[{other}]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn result(line: &Value) -> BackendEvent {
    let u = |k: &str| line.pointer(&format!("/usage/{k}")).and_then(Value::as_u64).unwrap_or(0);
    let usage = Usage {
        input_tokens: u("input_tokens") + u("cache_creation_input_tokens") + u("cache_read_input_tokens"),
        output_tokens: u("output_tokens"),
        cached_input_tokens: u("cache_read_input_tokens"),
        cache_write_tokens: u("cache_creation_input_tokens"),
    };
    let text = line.get("result").and_then(Value::as_str).unwrap_or("").to_string();
    let is_error = line.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    let subtype = line.get("subtype").and_then(Value::as_str).unwrap_or("");
    if is_error || subtype.starts_with("error") {
        let why = if text.is_empty() {
            let errors = line.get("errors").map(Value::to_string).unwrap_or_default();
            format!("Claude Code ended the turn with `{subtype}` {errors}").trim_end().to_string()
        } else {
            text
        };
        return BackendEvent::Failed { message: why };
    }
    let stop_reason = match line.get("stop_reason").and_then(Value::as_str) {
        Some("max_tokens") => "max_tokens",
        Some("refusal") => "refusal",
        _ => "end_turn",
    };
    let cost_usd = line.get("total_cost_usd").and_then(Value::as_f64);
    BackendEvent::End { result: text, stop_reason: stop_reason.to_string(), usage, cost_usd }
}

#[cfg(test)]
#[path = "claude_tests.rs"]
mod tests;

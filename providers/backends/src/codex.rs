//! Codex (`codex`, npm `@openai/codex`) through its app-server protocol: `codex app-server`
//! speaks JSON-RPC (without the `jsonrpc` member) on stdin and stdout, one message a line.
//! superpi sends `initialize`, `initialized`, `thread/start` (or `thread/resume` of the stored
//! thread) and, once the thread's id is known, `turn/start` with the prompt; Codex streams
//! notifications (`item/started`, `item/completed`, `item/agentMessage/delta`, reasoning
//! deltas, `thread/tokenUsage/updated`, `turn/completed`, `error`) and asks approvals as
//! requests (`item/commandExecution/requestApproval`, `item/fileChange/requestApproval`),
//! answered `{"decision": "accept" | "decline"}`.
//!
//! The translator is a pure function of the bytes (and the prompt it starts the turn with).
//! The items Codex ran become tool calls and results under names of their kind (`shell`,
//! `apply_patch`, `mcp__SERVER__TOOL`, `web_search`).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Value, json};
use superpi_policy::Mode;
use superpi_proto::{ContentBlock, Effort, Usage};

use crate::event::{Approval, ApprovalRequest, BackendEvent, PromptImage};
use crate::lines::{LineTranslator, Translating};

/// The id of `turn/start`, whose error fails the turn; `initialize` and the thread's are 0 and 1.
const TURN_START: u64 = 2;

/// The command line: `base_url` (the kernel's `OPENAI_BASE_URL`) becomes a model provider of
/// its own speaking the Responses API with `OPENAI_API_KEY`: Codex's built-in OpenAI provider
/// ignores that variable. And `workspace` (canonical) and every folder above it are
/// untrusted projects ([`untrusted`]).
pub fn args(base_url: Option<&str>, workspace: &Path) -> Vec<String> {
    let mut args = vec!["app-server".to_string(), "-c".into(), untrusted(workspace)];
    if let Some(url) = base_url {
        let provider = format!(
            "model_providers.superpi={{name={},base_url={},env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}}",
            toml_string("OpenAI-compatible (OPENAI_BASE_URL)"),
            toml_string(url)
        );
        args.extend(["-c".into(), "model_provider=\"superpi\"".into(), "-c".into(), provider]);
    }
    args
}

/// Codex's sandbox and approval policy for a superpi mode. Codex's sandbox is bubblewrap,
/// which needs the namespaces superpi's confinement refuses: inside it a sandboxed command
/// cannot start. So where superpi confines Codex, it runs unrestricted by Codex (superpi's
/// confinement, the workspace the one writable place, holds it and its commands) except in
/// `plan`, which stays `read-only` (no command starts: it fails closed). `accept-edits` asks
/// for every command Codex does not know to be safe (`untrusted`); `auto` asks nothing.
pub fn policy(mode: Mode, confined: bool) -> (&'static str, &'static str) {
    let sandbox = match mode {
        Mode::Plan => "read-only",
        Mode::AcceptEdits | Mode::Auto if confined => "danger-full-access",
        Mode::AcceptEdits | Mode::Auto => "workspace-write",
    };
    let approvals = match mode {
        Mode::Plan | Mode::Auto => "never",
        Mode::AcceptEdits => "untrusted",
    };
    (sandbox, approvals)
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

/// The reasoning effort `turn/start` asks for (Codex sends it on as the Responses API's
/// `reasoning.effort`): superpi's `off` is OpenAI's `minimal`, as for its own OpenAI requests.
pub fn reasoning_effort(effort: Effort) -> &'static str {
    match effort {
        Effort::Off => "minimal",
        Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High => "high",
    }
}

/// `projects={"DIR"={trust_level="untrusted"}, ...}` for `workspace` and each folder above it.
/// Codex 0.171.0 obeys a trusted project's `.codex/config.toml` (MCP servers and hooks that run
/// commands, its own sandbox and approval policy), hooks and `.codex/rules` (commands allowed
/// without asking); a tool call can write them. Started with a workspace-write or full-access
/// sandbox in a folder of no trust level, its app server records the folder (or the root of
/// its git repository) as trusted in `CODEX_HOME/config.toml` and loads them. Marked
/// untrusted here (a `-c` override is above every configuration file), it loads none of them,
/// records nothing, and a folder some earlier run recorded as trusted is untrusted too. The
/// project's `AGENTS.md` and skills are still read: prompt text, each command of which is
/// asked about as any other. Every folder above: a `.codex/` of the git root is loaded by the
/// root's trust, not the workspace's (tested by hand: a planted MCP server started).
pub fn untrusted(workspace: &Path) -> String {
    let folders: Vec<String> = workspace
        .ancestors()
        .map(|dir| format!("{}={{trust_level=\"untrusted\"}}", toml_string(&dir.display().to_string())))
        .collect();
    format!("projects={{{}}}", folders.join(","))
}

fn toml_string(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// What a turn starts with.
#[derive(Debug, Clone, Default)]
pub struct Start {
    pub prompt: String,
    /// The prompt's images, sent as data URLs (`UserInput::Image`).
    pub images: Vec<PromptImage>,
    pub cwd: String,
    pub mode: Option<Mode>,
    pub confined: bool,
    pub model: Option<String>,
    pub effort: Option<Effort>,
    pub resume: Option<String>,
}

/// The opening lines: the handshake and the thread to work in.
pub fn opening(start: &Start) -> String {
    let (sandbox, approvals) = policy(start.mode.unwrap_or(Mode::Plan), start.confined);
    let mut thread = json!({"cwd": start.cwd, "sandbox": sandbox, "approvalPolicy": approvals});
    if let Some(model) = &start.model {
        thread["model"] = json!(model);
    }
    let thread = match &start.resume {
        Some(id) => {
            thread["threadId"] = json!(id);
            json!({"id": 1, "method": "thread/resume", "params": thread})
        }
        None => json!({"id": 1, "method": "thread/start", "params": thread}),
    };
    let initialize = json!({"id": 0, "method": "initialize",
        "params": {"clientInfo": {"name": "superpi", "title": "superpi", "version": env!("CARGO_PKG_VERSION")}}});
    format!("{initialize}\n{}\n{thread}\n", json!({"method": "initialized"}))
}

/// The answer to an approval request.
pub fn approval_line(request: &ApprovalRequest, approval: &Approval) -> String {
    let decision = match approval {
        Approval::Allow => "accept",
        Approval::Deny { .. } => "decline",
    };
    format!("{}\n", json!({"id": request_id(&request.id), "result": {"decision": decision}}))
}

/// The refusal of a request superpi does not serve.
pub fn refusal_line(request_id_text: &str, what: &str) -> String {
    let error = json!({"code": -32601, "message": format!("superpi does not serve `{what}`")});
    format!("{}\n", json!({"id": request_id(request_id_text), "error": error}))
}

/// A request's id as Codex sent it (kept as its JSON text).
fn request_id(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Codex's app-server output, translated.
pub type Translator = Translating<Stream>;

/// What Codex's output said so far.
#[derive(Debug, Default)]
pub struct Stream {
    /// The turn to start once the thread is known.
    pub start: Start,
    thread: Option<String>,
    turn: Option<String>,
    /// Items already announced as tool calls, with what the call was.
    started: HashSet<String>,
    /// Agent messages whose text came as deltas.
    streamed: HashSet<String>,
    /// Command output streamed so far, per item.
    output: HashMap<String, String>,
    usage: Usage,
    /// The last agent message: the turn's result.
    last_text: String,
    ended: bool,
}

impl LineTranslator for Stream {
    const PROGRAM: &'static str = "codex";

    /// Whether the turn ended (`turn/completed`, or a refused start).
    fn ended(&self) -> bool {
        self.ended
    }

    fn line(&mut self, line: &Value, out: &mut Vec<BackendEvent>) {
        let method = line.get("method").and_then(Value::as_str);
        let params = line.get("params").unwrap_or(&Value::Null);
        match (method, line.get("id")) {
            (Some(method), Some(id)) => self.request(id, method, params, out),
            (Some(method), None) => self.notification(method, params, out),
            (None, Some(id)) => self.response(id, line, out),
            (None, None) => {}
        }
    }
}

impl Stream {
    /// A turn of the given start (the driver's).
    pub fn new(start: Start) -> Self {
        Stream { start, ..Default::default() }
    }

    fn response(&mut self, id: &Value, line: &Value, out: &mut Vec<BackendEvent>) {
        if let Some(error) = line.get("error") {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("Codex refused the turn");
            self.ended = true;
            out.push(BackendEvent::Failed { message: format!("Codex: {message}") });
            return;
        }
        match id.as_u64() {
            Some(1) => {
                let Some(thread) = line.pointer("/result/thread/id").and_then(Value::as_str) else { return };
                self.thread = Some(thread.to_string());
                out.push(BackendEvent::Session { id: thread.to_string() });
                let images = self.start.images.iter().map(
                    |image| json!({"type": "image", "url": format!("data:{};base64,{}", image.media_type, image.data)}),
                );
                let input: Vec<Value> =
                    std::iter::once(json!({"type": "text", "text": self.start.prompt})).chain(images).collect();
                let mut params = json!({"threadId": thread, "input": input});
                if let Some(effort) = self.start.effort {
                    params["effort"] = json!(reasoning_effort(effort));
                }
                let line = json!({"id": TURN_START, "method": "turn/start", "params": params});
                out.push(BackendEvent::Write { line: format!("{line}\n") });
            }
            Some(TURN_START) => {
                self.turn = line.pointer("/result/turn/id").and_then(Value::as_str).map(str::to_string);
            }
            _ => {}
        }
    }

    fn request(&mut self, id: &Value, method: &str, params: &Value, out: &mut Vec<BackendEvent>) {
        let item_id = params.get("itemId").and_then(Value::as_str).map(str::to_string);
        let reason = params.get("reason").and_then(Value::as_str).map(str::to_string);
        let (tool_name, input) = match method {
            "item/commandExecution/requestApproval" => ("shell", json!({"command": params.get("command")})),
            "item/fileChange/requestApproval" => ("apply_patch", json!({"grant_root": params.get("grantRoot")})),
            _ => {
                out.push(BackendEvent::Unsupported { request_id: id.to_string(), what: method.to_string() });
                return;
            }
        };
        out.push(BackendEvent::ApprovalRequest(ApprovalRequest {
            id: id.to_string(),
            tool_name: tool_name.to_string(),
            input,
            tool_call_id: item_id,
            reason,
        }));
    }

    fn notification(&mut self, method: &str, params: &Value, out: &mut Vec<BackendEvent>) {
        let text = |k: &str| params.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match method {
            "item/agentMessage/delta" => {
                self.streamed.insert(text("itemId"));
                out.push(BackendEvent::TextDelta { index: 0, delta: text("delta") });
            }
            "item/reasoning/summaryTextDelta" | "item/reasoning/textDelta" => {
                out.push(BackendEvent::ThinkingDelta { index: 0, delta: text("delta") })
            }
            "item/commandExecution/outputDelta" => {
                self.output.entry(text("itemId")).or_default().push_str(&text("delta"));
            }
            "item/started" => {
                if let Some(item) = params.get("item") {
                    self.announce(item, out);
                }
            }
            "item/completed" => {
                if let Some(item) = params.get("item") {
                    self.completed(item, out);
                }
            }
            "thread/tokenUsage/updated" if self.is_this_turn(params) => {
                let last = |k: &str| params.pointer(&format!("/tokenUsage/last/{k}")).and_then(Value::as_u64);
                self.usage.input_tokens += last("inputTokens").unwrap_or(0);
                self.usage.output_tokens += last("outputTokens").unwrap_or(0);
                self.usage.cached_input_tokens += last("cachedInputTokens").unwrap_or(0);
            }
            "turn/completed" => self.turn_completed(params.get("turn").unwrap_or(&Value::Null), out),
            "turn/plan/updated" if self.is_this_turn(params) => {
                let steps = params.get("plan").and_then(Value::as_array).into_iter().flatten();
                let entries = steps
                    .enumerate()
                    .map(|(at, step)| {
                        let field = |k: &str| step.get(k).and_then(Value::as_str).unwrap_or("");
                        crate::event::plan_entry(at, None, field("step"), field("status"))
                    })
                    .collect();
                out.push(BackendEvent::Plan { entries });
            }
            "error" => {
                let message = params.pointer("/error/message").and_then(Value::as_str).unwrap_or("Codex failed");
                if params.get("willRetry").and_then(Value::as_bool).unwrap_or(false) {
                    out.push(BackendEvent::Retrying { attempt: 0, delay_ms: 0, reason: message.to_string() });
                } else {
                    out.push(BackendEvent::Notice { level: "error", message: message.to_string() });
                }
            }
            "warning" => out.push(BackendEvent::Notice { level: "warning", message: text("message") }),
            _ => {}
        }
    }

    /// Whether a notification is about the turn superpi started (a resumed thread first
    /// reports its earlier turn's usage).
    fn is_this_turn(&self, params: &Value) -> bool {
        let turn = params.get("turnId").and_then(Value::as_str);
        self.turn.is_some() && turn == self.turn.as_deref()
    }

    fn turn_completed(&mut self, turn: &Value, out: &mut Vec<BackendEvent>) {
        self.ended = true;
        match turn.get("status").and_then(Value::as_str) {
            Some("completed") => out.push(BackendEvent::End {
                result: std::mem::take(&mut self.last_text),
                stop_reason: "end_turn".into(),
                usage: self.usage,
                cost_usd: None,
            }),
            status => {
                let message = turn.pointer("/error/message").and_then(Value::as_str).map(str::to_string);
                let message =
                    message.unwrap_or_else(|| format!("Codex ended the turn {}", status.unwrap_or("unknown")));
                out.push(BackendEvent::Failed { message });
            }
        }
    }

    /// The tool call an item stands for, announced once.
    fn announce(&mut self, item: &Value, out: &mut Vec<BackendEvent>) {
        let Some((name, arguments)) = tool_call(item) else { return };
        let id = text_of(item, "id");
        if self.started.insert(id.clone()) {
            out.push(BackendEvent::Message { content: vec![ContentBlock::ToolCall { id, name, arguments }] });
        }
    }

    fn completed(&mut self, item: &Value, out: &mut Vec<BackendEvent>) {
        let id = text_of(item, "id");
        match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "agentMessage" => {
                let text = text_of(item, "text");
                if !self.streamed.contains(&id) {
                    out.push(BackendEvent::TextDelta { index: 0, delta: text.clone() });
                }
                out.push(BackendEvent::Message { content: vec![ContentBlock::Text { text: text.clone() }] });
                self.last_text = text;
            }
            "reasoning" => {
                let parts = item.get("summary").and_then(Value::as_array).into_iter().flatten();
                let thinking: Vec<&str> = parts.filter_map(Value::as_str).collect();
                if !thinking.is_empty() {
                    let thinking =
                        ContentBlock::Thinking { thinking: thinking.join("\n"), signature: None, redacted: false };
                    out.push(BackendEvent::Message { content: vec![thinking] });
                }
            }
            _ => {
                if tool_call(item).is_none() {
                    return;
                }
                self.announce(item, out);
                let streamed = self.output.remove(&id).unwrap_or_default();
                let (output, is_error) = tool_result(item, streamed);
                out.push(BackendEvent::ToolResult { tool_call_id: id, output, is_error });
            }
        }
    }
}

fn text_of(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The name and arguments of an item Codex runs.
fn tool_call(item: &Value) -> Option<(String, Value)> {
    let field = |k: &str| item.get(k).cloned().unwrap_or(Value::Null);
    Some(match item.get("type").and_then(Value::as_str)? {
        "commandExecution" => ("shell".into(), json!({"command": field("command")})),
        "fileChange" => ("apply_patch".into(), json!({"changes": field("changes")})),
        "mcpToolCall" => (format!("mcp__{}__{}", text_of(item, "server"), text_of(item, "tool")), field("arguments")),
        "webSearch" => ("web_search".into(), json!({"query": field("query")})),
        _ => return None,
    })
}

/// What an item Codex ran produced (`streamed`: its output deltas), and whether it failed.
fn tool_result(item: &Value, streamed: String) -> (String, bool) {
    let status = item.get("status").and_then(Value::as_str).unwrap_or("");
    let failed = matches!(status, "failed" | "declined");
    match item.get("type").and_then(Value::as_str).unwrap_or("") {
        "commandExecution" => {
            let output = item.get("aggregatedOutput").and_then(Value::as_str).map_or(streamed, str::to_string);
            let output =
                if status == "declined" { "The command was refused, so it did not run.".to_string() } else { output };
            let exit = item.get("exitCode").and_then(Value::as_i64);
            (output, failed || exit.is_some_and(|c| c != 0))
        }
        "fileChange" => {
            let changes = item.get("changes").and_then(Value::as_array).into_iter().flatten();
            let kind = |c: &Value| {
                c.pointer("/kind/type").or_else(|| c.get("kind")).and_then(Value::as_str).unwrap_or("").to_string()
            };
            let lines: Vec<String> = changes.map(|c| format!("{} {}", kind(c), text_of(c, "path"))).collect();
            (lines.join("\n"), failed)
        }
        "mcpToolCall" => match item.get("error").filter(|e| !e.is_null()) {
            Some(error) => (error.get("message").and_then(Value::as_str).unwrap_or("failed").to_string(), true),
            None => (item.get("result").map(Value::to_string).unwrap_or_default(), failed),
        },
        _ => (String::new(), failed),
    }
}

#[cfg(test)]
#[path = "codex_tests.rs"]
mod tests;

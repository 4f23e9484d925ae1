//! OpenCode (`opencode`, npm `opencode-ai`) through its HTTP server: `opencode serve` is
//! started once per workspace and kept (it takes about 20 s to start offline), each
//! conversation is one of its sessions (`POST /session`), a turn is `POST
//! /session/{id}/prompt_async`, and what happens comes on its bus (`GET /event`, server-sent
//! events `{type, properties}`): `message.updated` (a message's role and tokens),
//! `message.part.updated` (a text, reasoning or tool part as it is now), `message.part.delta`
//! (streamed text of a part), `permission.asked` (answered by `POST
//! /permission/{id}/reply`), `session.status` (`busy`, `retry`, `idle`: the end) and
//! `session.error`. Cancel is `POST /session/{id}/abort`.
//!
//! This module is the pure half: the configuration superpi writes for the server, the
//! session's permission rules per superpi mode, which session an event is about, and the
//! translator of one session's events into [`BackendEvent`]s. The server and its HTTP are
//! in [`crate::opencode_server`].

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};
use superpi_policy::Mode;
use superpi_proto::{ContentBlock, Usage};

use crate::event::{ApprovalRequest, BackendEvent};

/// The provider id superpi's model is configured under in OpenCode.
pub const PROVIDER_ID: &str = "superpi";

/// The variable the server reads the model API's key from (`{env:...}` in its config, so the
/// key is never written to a file).
pub const KEY_VAR: &str = "SUPERPI_OPENCODE_API_KEY";

/// The model API superpi routes the conversation's model to, handed to OpenCode as a
/// provider of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// `openai` (Chat Completions, any compatible server), `anthropic` or `gemini`.
    pub api: String,
    /// superpi's base URL for that API (`https://api.openai.com/v1`, ...).
    pub base_url: String,
    pub api_key: Option<String>,
    /// The id sent upstream.
    pub model: String,
}

impl Endpoint {
    /// The AI SDK package OpenCode speaks the API with, and the base URL that package
    /// expects (superpi's, with the version path the package adds for itself elsewhere).
    fn package(&self) -> (&'static str, String) {
        let base = self.base_url.trim_end_matches('/');
        match self.api.as_str() {
            "anthropic" => ("@ai-sdk/anthropic", format!("{base}/v1")),
            "gemini" => ("@ai-sdk/google", format!("{base}/v1beta")),
            _ => ("@ai-sdk/openai-compatible", base.to_string()),
        }
    }
}

/// The server's `opencode.json`: superpi's model as provider `superpi` (when it routes to a
/// model API), no sharing, no self-update, a refused tool call that lets the model go on
/// (the refusal is the call's result, as with the other backends), and the workspace's
/// `AGENTS.md` as instructions (the server ignores the project's own files, see
/// [`fixed_env`], and with them would lose it).
pub fn config(endpoint: Option<&Endpoint>, workspace: &std::path::Path) -> Value {
    let mut config = json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "experimental": {"continue_loop_on_deny": true},
        "instructions": [workspace.join("AGENTS.md").display().to_string()],
    });
    if let Some(endpoint) = endpoint {
        let (npm, base_url) = endpoint.package();
        let mut options = json!({"baseURL": base_url});
        if endpoint.api_key.is_some() {
            options["apiKey"] = json!(format!("{{env:{KEY_VAR}}}"));
        }
        config["provider"] = json!({PROVIDER_ID: {
            "npm": npm,
            "name": format!("superpi ({})", endpoint.api),
            "options": options,
            "models": {endpoint.model.clone(): {"name": endpoint.model, "tool_call": true}},
        }});
        config["model"] = json!(format!("{PROVIDER_ID}/{}", endpoint.model));
    }
    config
}

/// Variables superpi sets for the server: its state directory as its home and every XDG
/// directory (its configuration, sessions and caches; the user's own `~/.config/opencode` and
/// logins stay out of reach), the server's password, and nothing fetched or installed behind
/// the user's back (models list, self-update, default plugins, language servers, sharing).
///
/// And none of the project's configuration (`OPENCODE_DISABLE_PROJECT_CONFIG`): its
/// `opencode.json(c)` and `.opencode/` (in the workspace or any folder up to its repository's
/// root) could set `permission` rules that allow what superpi's session [`rules`] ask about,
/// and add MCP servers, plugins, custom tools and agents that run code at the server's start;
/// a tool call may write them, so one turn could grant the next. (It also drops the project's
/// `AGENTS.md`, given back by [`config`].)
pub fn fixed_env(home: &std::path::Path, password: &str) -> Vec<(String, String)> {
    let at = |dir: &str| home.join(dir).display().to_string();
    let mut env = vec![
        ("HOME".to_string(), home.display().to_string()),
        ("XDG_CONFIG_HOME".to_string(), at(".config")),
        ("XDG_DATA_HOME".to_string(), at(".local/share")),
        ("XDG_STATE_HOME".to_string(), at(".local/state")),
        ("XDG_CACHE_HOME".to_string(), at(".cache")),
        ("OPENCODE_SERVER_PASSWORD".to_string(), password.to_string()),
    ];
    for flag in [
        "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
        "OPENCODE_DISABLE_SHARE",
        "OPENCODE_DISABLE_PROJECT_CONFIG",
    ] {
        env.push((flag.to_string(), "1".to_string()));
    }
    env
}

/// The session's permission rules for a superpi mode (OpenCode's last matching rule wins, and
/// a session's rules come after its agent's). OpenCode's own questions to the user and its
/// plan-mode switches are refused: superpi's mode decides.
///
/// | superpi mode | OpenCode |
/// | --- | --- |
/// | `plan` | no edits, no shell, no subagents: reading and searching |
/// | `accept-edits` | edits run; each shell command asks |
/// | `auto` | everything runs, inside superpi's confinement when the sandbox is on |
pub fn rules(mode: Mode) -> Value {
    let rule = |permission: &str, action: &str| json!({"permission": permission, "pattern": "*", "action": action});
    let mut rules = match mode {
        Mode::Plan => vec![rule("edit", "deny"), rule("bash", "deny"), rule("task", "deny")],
        Mode::AcceptEdits => vec![rule("edit", "allow"), rule("bash", "ask")],
        Mode::Auto => vec![rule("*", "allow")],
    };
    rules.extend([rule("question", "deny"), rule("plan_enter", "deny"), rule("plan_exit", "deny")]);
    Value::Array(rules)
}

/// The body of `prompt_async`.
pub fn prompt_body(prompt: &str, endpoint: Option<&Endpoint>) -> Value {
    let mut body = json!({"parts": [{"type": "text", "text": prompt}]});
    if let Some(endpoint) = endpoint {
        body["model"] = json!({"providerID": PROVIDER_ID, "modelID": endpoint.model});
    }
    body
}

/// The answer to a `permission.asked`: superpi remembers lasting answers itself, so OpenCode
/// is told `once` or `reject` and asks again next time.
pub fn reply_body(approval: &crate::event::Approval) -> Value {
    match approval {
        crate::event::Approval::Allow => json!({"reply": "once"}),
        crate::event::Approval::Deny { message } => json!({"reply": "reject", "message": message}),
    }
}

/// The session a bus event is about, if any.
pub fn session_of(event: &Value) -> Option<&str> {
    let properties = event.get("properties")?;
    ["/sessionID", "/part/sessionID", "/info/sessionID"]
        .iter()
        .find_map(|p| properties.pointer(p))
        .and_then(Value::as_str)
}

/// A session a `session.created` event announces and its parent (a subagent's session).
pub fn created_child(event: &Value) -> Option<(&str, &str)> {
    if event.get("type").and_then(Value::as_str) != Some("session.created") {
        return None;
    }
    let info = event.pointer("/properties/info")?;
    Some((info.get("id")?.as_str()?, info.get("parentID")?.as_str()?))
}

/// What kind of streamed part a part id is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Streamed {
    Text,
    Reasoning,
}

/// One session's events, translated: a pure function of the events in order.
#[derive(Debug, Default)]
pub struct Stream {
    session: String,
    /// Each message's role, from `message.updated`.
    roles: HashMap<String, String>,
    /// Parts whose role was not known yet, replayed once it is.
    waiting: HashMap<String, Vec<Value>>,
    /// Open parts of the answer, in the order they began: id, kind, and the text shown so far.
    parts: Vec<(String, Streamed, String)>,
    /// Completed parts (their text is in a message already).
    done: HashSet<String>,
    /// Tool calls announced, and those whose result was reported.
    announced: HashSet<String>,
    reported: HashSet<String>,
    /// Answer text and reasoning since the last tool call.
    text: String,
    thinking: String,
    last_text: String,
    /// Tokens of each assistant message (its latest count).
    tokens: HashMap<String, Usage>,
    /// What OpenCode says each assistant message cost, in US dollars (its latest figure).
    costs: HashMap<String, f64>,
    error: Option<String>,
    ended: bool,
}

impl Stream {
    /// The translator of session `session`'s turn.
    pub fn new(session: &str) -> Self {
        Stream { session: session.to_string(), ..Default::default() }
    }

    /// Whether the turn ended (the session went idle).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The events one bus event makes.
    pub fn event(&mut self, event: &Value, out: &mut Vec<BackendEvent>) {
        if self.ended {
            return;
        }
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let properties = event.get("properties").unwrap_or(&Value::Null);
        // A subagent's questions are the turn's; the rest of its session stays inside its call.
        if kind == "permission.asked" {
            self.permission(properties, out);
            return;
        }
        if session_of(event) != Some(self.session.as_str()) {
            return;
        }
        match kind {
            "message.updated" => self.message(properties.get("info").unwrap_or(&Value::Null), out),
            "message.part.updated" => self.part(properties.get("part").unwrap_or(&Value::Null), out),
            "message.part.delta" => self.delta(properties, out),
            "session.status" => match properties.pointer("/status/type").and_then(Value::as_str) {
                Some("idle") => self.end(out),
                Some("retry") => {
                    let attempt = properties.pointer("/status/attempt").and_then(Value::as_u64).unwrap_or(0);
                    let reason = text_at(properties, "/status/message");
                    out.push(BackendEvent::Retrying { attempt: attempt as u32, delay_ms: 0, reason });
                }
                _ => {}
            },
            "session.idle" => self.end(out),
            "todo.updated" => {
                let todos = properties.get("todos").and_then(Value::as_array).into_iter().flatten();
                let entries = todos
                    .enumerate()
                    .map(|(at, todo)| {
                        let field = |k: &str| todo.get(k).and_then(Value::as_str);
                        crate::event::plan_entry(
                            at,
                            field("id"),
                            field("content").unwrap_or(""),
                            field("status").unwrap_or(""),
                        )
                    })
                    .collect();
                out.push(BackendEvent::Plan { entries });
            }
            "session.error" => {
                if let Some(error) = properties.get("error") {
                    self.error = Some(error_text(error));
                }
            }
            _ => {}
        }
    }

    fn message(&mut self, info: &Value, out: &mut Vec<BackendEvent>) {
        let id = text_at(info, "/id");
        let role = text_at(info, "/role");
        if role == "assistant" {
            let count = |p: &str| info.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let usage = Usage {
                input_tokens: count("/tokens/input") + count("/tokens/cache/read") + count("/tokens/cache/write"),
                output_tokens: count("/tokens/output") + count("/tokens/reasoning"),
                cached_input_tokens: count("/tokens/cache/read"),
                cache_write_tokens: count("/tokens/cache/write"),
            };
            self.tokens.insert(id.clone(), usage);
            if let Some(cost) = info.get("cost").and_then(Value::as_f64) {
                self.costs.insert(id.clone(), cost);
            }
            if let Some(error) = info.get("error").filter(|e| !e.is_null()) {
                self.error = Some(error_text(error));
            }
        }
        self.roles.insert(id.clone(), role);
        for part in self.waiting.remove(&id).unwrap_or_default() {
            self.part(&part, out);
        }
    }

    fn part(&mut self, part: &Value, out: &mut Vec<BackendEvent>) {
        let message = text_at(part, "/messageID");
        match self.roles.get(&message).map(String::as_str) {
            Some("assistant") => {}
            Some(_) => return,
            None => {
                self.waiting.entry(message).or_default().push(part.clone());
                return;
            }
        }
        let id = text_at(part, "/id");
        match part.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" if part.get("synthetic").and_then(Value::as_bool) != Some(true) => {
                self.streamed(id, Streamed::Text, part, out)
            }
            "reasoning" => self.streamed(id, Streamed::Reasoning, part, out),
            "tool" => self.tool(part, out),
            _ => {}
        }
    }

    /// A text or reasoning part as it is now: the part of its text not shown yet is shown,
    /// and once it is complete (`time.end`) it joins the message being written.
    fn streamed(&mut self, id: String, kind: Streamed, part: &Value, out: &mut Vec<BackendEvent>) {
        if self.done.contains(&id) {
            return;
        }
        let text = text_at(part, "/text");
        let at = match self.parts.iter().position(|(open, ..)| *open == id) {
            Some(at) => at,
            None => {
                self.parts.push((id.clone(), kind, String::new()));
                self.parts.len() - 1
            }
        };
        let shown = &mut self.parts[at].2;
        if let Some(rest) = text.strip_prefix(shown.as_str()).filter(|rest| !rest.is_empty()) {
            out.push(delta(kind, rest.to_string()));
            *shown = text;
        }
        if part.pointer("/time/end").is_some_and(|end| !end.is_null()) {
            self.close(at);
        }
    }

    /// A part is complete: its text joins the message being written.
    fn close(&mut self, at: usize) {
        let (id, kind, text) = self.parts.remove(at);
        self.done.insert(id);
        match kind {
            Streamed::Text => self.text.push_str(&text),
            Streamed::Reasoning => self.thinking.push_str(&text),
        }
    }

    /// Every open part is taken as it is (a call begins, or the turn ends).
    fn close_all(&mut self) {
        while !self.parts.is_empty() {
            self.close(0);
        }
    }

    fn delta(&mut self, properties: &Value, out: &mut Vec<BackendEvent>) {
        if properties.get("field").and_then(Value::as_str) != Some("text") {
            return;
        }
        let id = text_at(properties, "/partID");
        let Some((_, kind, shown)) = self.parts.iter_mut().find(|(open, ..)| *open == id) else { return };
        let delta_text = text_at(properties, "/delta");
        shown.push_str(&delta_text);
        out.push(delta(*kind, delta_text));
    }

    fn tool(&mut self, part: &Value, out: &mut Vec<BackendEvent>) {
        let call = text_at(part, "/callID");
        let status = text_at(part, "/state/status");
        // A pending call's input is still being written.
        if status == "pending" || self.reported.contains(&call) {
            return;
        }
        if self.announced.insert(call.clone()) {
            // The text before the call was streamed already; OpenCode closes it a moment later.
            self.close_all();
            let arguments = part.pointer("/state/input").cloned().unwrap_or_else(|| json!({}));
            let mut content = self.take_message();
            content.push(ContentBlock::ToolCall { id: call.clone(), name: text_at(part, "/tool"), arguments });
            out.push(BackendEvent::Message { content });
        }
        let (output, is_error) = match status.as_str() {
            // OpenCode answers a call to a tool it does not offer through its `invalid` tool.
            "completed" => (text_at(part, "/state/output"), text_at(part, "/tool") == "invalid"),
            "error" => (text_at(part, "/state/error"), true),
            _ => return,
        };
        self.reported.insert(call.clone());
        out.push(BackendEvent::ToolResult { tool_call_id: call, output, is_error });
    }

    fn permission(&mut self, properties: &Value, out: &mut Vec<BackendEvent>) {
        let permission = text_at(properties, "/permission");
        let patterns: Vec<&str> = properties
            .get("patterns")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut input = properties.get("metadata").filter(|m| m.is_object()).cloned().unwrap_or_else(|| json!({}));
        input["patterns"] = json!(patterns);
        // A shell command's patterns are its commands; superpi remembers lasting answers by them.
        if permission == "bash" && input.get("command").is_none() {
            input["command"] = json!(patterns.join(" && "));
        }
        let tool_call_id = properties.pointer("/tool/callID").and_then(Value::as_str).map(str::to_string);
        let reason = match patterns.as_slice() {
            [] => format!("OpenCode asks to use {permission}"),
            patterns => format!("OpenCode asks to use {permission}: {}", patterns.join(", ")),
        };
        out.push(BackendEvent::ApprovalRequest(ApprovalRequest {
            id: text_at(properties, "/id"),
            tool_name: permission,
            input,
            tool_call_id,
            reason: Some(reason),
        }));
    }

    /// The reasoning and text written since the last call, as a message's blocks.
    fn take_message(&mut self) -> Vec<ContentBlock> {
        let mut content = Vec::new();
        if !self.thinking.is_empty() {
            let thinking = std::mem::take(&mut self.thinking);
            content.push(ContentBlock::Thinking { thinking, signature: None, redacted: false });
        }
        if !self.text.is_empty() {
            self.last_text = std::mem::take(&mut self.text);
            content.push(ContentBlock::Text { text: self.last_text.clone() });
        }
        content
    }

    fn end(&mut self, out: &mut Vec<BackendEvent>) {
        self.ended = true;
        // Parts still open when the session went idle (an aborted or failed step).
        self.close_all();
        let content = self.take_message();
        if !content.is_empty() {
            out.push(BackendEvent::Message { content });
        }
        if let Some(message) = self.error.take() {
            out.push(BackendEvent::Failed { message: format!("OpenCode: {message}") });
            return;
        }
        let usage = self.tokens.values().fold(Usage::default(), |mut total, u| {
            total.add(*u);
            total
        });
        // What OpenCode priced (a model it knows no price of costs 0 there: then say nothing).
        let cost_usd = Some(self.costs.values().sum::<f64>()).filter(|cost| *cost > 0.0);
        let result = std::mem::take(&mut self.last_text);
        out.push(BackendEvent::End { result, stop_reason: "end_turn".into(), usage, cost_usd });
    }
}

fn delta(kind: Streamed, delta: String) -> BackendEvent {
    match kind {
        Streamed::Text => BackendEvent::TextDelta { index: 0, delta },
        Streamed::Reasoning => BackendEvent::ThinkingDelta { index: 0, delta },
    }
}

fn text_at(value: &Value, pointer: &str) -> String {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("").to_string()
}

/// An OpenCode error (`{name, data: {message}}`) in words.
fn error_text(error: &Value) -> String {
    let name = text_at(error, "/name");
    match error.pointer("/data/message").and_then(Value::as_str) {
        Some(message) if !message.is_empty() => message.to_string(),
        _ if !name.is_empty() => name,
        _ => error.to_string(),
    }
}

#[cfg(test)]
#[path = "opencode_tests.rs"]
mod tests;

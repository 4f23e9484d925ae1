//! The model behind a third-party agent: one of the fake vendor servers of superpi's own tests
//! (superpi-providers' `testing` feature), which refuse a request that breaks the vendor's
//! documented rules, answering from the prompt the way superpi's mock model does, so that the
//! same client script can drive superpi and another agent:
//!
//! - a line `@tool NAME JSON` asks for that tool call (when the request offers a tool of that
//!   name; else the answer says which tools it offers), and the tool's result is answered with
//!   `the tool ran`;
//! - `@hold` starts an answer that never ends (a model still answering, for cancelling);
//! - anything else is echoed.
//!
//! `FAKE_MODEL_DUMP=DIR` writes each request's body there (`N.json`), to see what an agent sends.

use clap::ValueEnum;
use serde_json::Value;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::FakeServer;
use superpi_providers::testing::rules::Vendor;

/// The vendor API a fake model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FakeModel {
    /// Anthropic Messages (`POST /v1/messages`): Claude Code and the Claude Agent SDK.
    Anthropic,
    /// OpenAI Responses (`POST /v1/responses`): Codex.
    OpenaiResponses,
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    Openai,
}

impl FakeModel {
    pub fn vendor(self) -> Vendor {
        match self {
            FakeModel::Anthropic => Vendor::Anthropic,
            FakeModel::OpenaiResponses => Vendor::OpenaiResponses,
            FakeModel::Openai => Vendor::Openai,
        }
    }
}

/// Starts the fake; its `env()` gives the agent the vendor's key and base URL variables.
pub async fn start(model: FakeModel) -> std::io::Result<FakeServer> {
    let fake = FakeServer::start(&[model.vendor()], Vec::new()).await?;
    // Claude Code's requests carry betas (context management, ...) on top of the documented API.
    fake.accept_betas();
    fake.set_responder(Box::new(|vendor, body| Some(respond(vendor, body))));
    Ok(fake)
}

/// The last message of a request.
#[derive(Debug, PartialEq)]
enum Last {
    /// A tool's result goes back to the model.
    ToolResult,
    /// The user's words (the last text part).
    Text(String),
}

fn respond(vendor: Vendor, body: &Value) -> Answer {
    if let Ok(dir) = std::env::var("FAKE_MODEL_DUMP") {
        let n = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        let _ = std::fs::write(format!("{dir}/{n}.json"), body.to_string());
    }
    let text = match last_message(vendor, body) {
        Some(Last::ToolResult) => return Answer::text("the tool ran"),
        Some(Last::Text(text)) => text,
        None => return Answer::text("(no user message)"),
    };
    if text.lines().any(|l| l.trim() == "@hold") {
        return Answer::Held("still answering ".into());
    }
    let Some(directive) = text.lines().find_map(|l| l.trim().strip_prefix("@tool ")) else {
        return Answer::text(text.trim().to_owned());
    };
    let (name, arguments) = directive.trim().split_once(' ').unwrap_or((directive.trim(), "{}"));
    let offered = tool_names(vendor, body);
    let Ok(arguments) = serde_json::from_str::<Value>(arguments) else {
        return Answer::text(format!("the fake model cannot parse the arguments {arguments}"));
    };
    if offered.iter().any(|n| n == name) {
        Answer::tool_call(name, arguments)
    } else {
        Answer::text(format!(
            "asked to call {name}, which this request does not offer (it offers: {})",
            offered.join(", ")
        ))
    }
}

/// The text of a content value: a string, or the last text part of an array (Claude Code
/// puts `<system-reminder>` parts before the prompt, Codex its environment context).
fn text_of(content: &Value, kinds: &[&str]) -> Option<String> {
    if let Some(s) = content.as_str() {
        return Some(s.to_owned());
    }
    content
        .as_array()?
        .iter()
        .rev()
        .filter(|p| p.get("type").and_then(Value::as_str).is_none_or(|t| kinds.contains(&t)))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .find(|t| !t.trim_start().starts_with("<system-reminder>"))
        .map(str::to_owned)
}

fn has_part(content: &Value, kinds: &[&str]) -> bool {
    content.as_array().is_some_and(|parts| {
        parts.iter().any(|p| p.get("type").and_then(Value::as_str).is_some_and(|t| kinds.contains(&t)))
    })
}

fn last_message(vendor: Vendor, body: &Value) -> Option<Last> {
    match vendor {
        Vendor::Anthropic => {
            // Claude Code appends a `system` message after the user's (its environment).
            let messages = body.get("messages")?.as_array()?;
            let user = messages.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
            let content = user.get("content")?;
            if has_part(content, &["tool_result"]) {
                return Some(Last::ToolResult);
            }
            text_of(content, &["text"]).map(Last::Text)
        }
        Vendor::OpenaiResponses => {
            let input = body.get("input")?;
            if let Some(s) = input.as_str() {
                return Some(Last::Text(s.to_owned()));
            }
            let last = input.as_array()?.last()?;
            let kind = last.get("type").and_then(Value::as_str).unwrap_or("message");
            if kind.ends_with("_output") {
                return Some(Last::ToolResult);
            }
            text_of(last.get("content")?, &["input_text", "text"]).map(Last::Text)
        }
        Vendor::Openai => {
            let last = body.get("messages")?.as_array()?.last()?;
            if last.get("role").and_then(Value::as_str) == Some("tool") {
                return Some(Last::ToolResult);
            }
            text_of(last.get("content")?, &["text"]).map(Last::Text)
        }
        Vendor::Gemini => {
            let parts = body.get("contents")?.as_array()?.last()?.get("parts")?.as_array()?;
            if parts.iter().any(|p| p.get("functionResponse").is_some()) {
                return Some(Last::ToolResult);
            }
            parts.iter().rev().find_map(|p| p.get("text").and_then(Value::as_str)).map(|t| Last::Text(t.to_owned()))
        }
    }
}

/// The names of the tools a request offers.
fn tool_names(vendor: Vendor, body: &Value) -> Vec<String> {
    let tools = body.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let name = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    match vendor {
        Vendor::Anthropic | Vendor::OpenaiResponses => tools.iter().filter_map(|t| name(t.get("name"))).collect(),
        Vendor::Openai => tools.iter().filter_map(|t| name(t.pointer("/function/name"))).collect(),
        Vendor::Gemini => tools
            .iter()
            .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
            .flatten()
            .filter_map(|d| name(d.get("name")))
            .collect(),
    }
}

#[cfg(test)]
#[path = "fake_model_tests.rs"]
mod tests;

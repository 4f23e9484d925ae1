//! Anthropic Messages request rules (`POST /v1/messages`), worded as the API words them.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Vendor, Violation, is_plain_name, tool_search};

fn violation(message: impl Into<String>) -> Violation {
    Violation::new(Vendor::Anthropic, message)
}

/// The headers the API needs: a key (or a bearer token) and `anthropic-version`.
pub fn check_headers(header: impl Fn(&str) -> Option<String>) -> Result<(), Violation> {
    let key = header("x-api-key").filter(|k| !k.is_empty());
    let bearer = header("authorization").filter(|a| a.starts_with("Bearer ") && a.len() > 7);
    if key.is_none() && bearer.is_none() {
        return Err(violation("x-api-key header is required").status(401));
    }
    if header("anthropic-version").is_none_or(|v| v.is_empty()) {
        return Err(violation("anthropic-version: header is required"));
    }
    Ok(())
}

/// Checks a request body; the first broken rule is the error.
pub fn check(body: &Value) -> Result<(), Violation> {
    let Some(object) = body.as_object() else {
        return Err(violation("The request body is not valid JSON."));
    };
    if object.get("model").and_then(Value::as_str).is_none_or(|m| m.is_empty()) {
        return Err(violation("model: Field required"));
    }
    let Some(max_tokens) = object.get("max_tokens") else {
        return Err(violation("max_tokens: Field required"));
    };
    let Some(max_tokens) = max_tokens.as_u64().filter(|n| *n >= 1) else {
        return Err(violation("max_tokens: Input should be greater than or equal to 1"));
    };
    let thinking = match object.get("thinking") {
        Some(thinking) if thinking.get("type").and_then(Value::as_str) == Some("enabled") => {
            let budget = thinking.get("budget_tokens").and_then(Value::as_u64).unwrap_or(0);
            if budget < 1024 {
                return Err(violation("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"));
            }
            if max_tokens <= budget {
                return Err(violation("`max_tokens` must be greater than `thinking.budget_tokens`"));
            }
            check_thinking_compatible(object)?;
            true
        }
        _ => false,
    };
    match object.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for (i, block) in blocks.iter().enumerate() {
                check_text_block(block, &format!("system.{i}"))?;
            }
        }
        Some(_) => return Err(violation("system: Input should be a valid list")),
    }
    check_tools(object.get("tools"))?;
    let model = object.get("model").and_then(Value::as_str).unwrap_or_default();
    let tools = object.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let catalog = tool_search::anthropic_catalog(model, tools)?;
    let Some(messages) = object.get("messages").and_then(Value::as_array) else {
        return Err(violation("messages: Field required"));
    };
    check_messages(messages, thinking)?;
    tool_search::anthropic_history(messages, &catalog)?;
    check_breakpoints(object)
}

/// At most this many `cache_control` breakpoints a request.
pub const MAX_BREAKPOINTS: usize = 4;

/// One `cache_control` (at `at`): `{"type": "ephemeral"}` with an optional `ttl` of `5m` or
/// `1h`; the ttl it stands for.
fn check_cache_control(control: &Value, at: &str) -> Result<&'static str, Violation> {
    let Some(control) = control.as_object() else {
        return Err(violation(format!("{at}: Input should be a valid dictionary")));
    };
    if control.get("type").and_then(Value::as_str) != Some("ephemeral") {
        return Err(violation(format!("{at}.type: Input should be 'ephemeral'")));
    }
    if let Some(key) = control.keys().find(|k| *k != "type" && *k != "ttl") {
        return Err(violation(format!("{at}.ephemeral.{key}: Extra inputs are not permitted")));
    }
    match control.get("ttl").map(Value::as_str) {
        None | Some(Some("5m")) => Ok("5m"),
        Some(Some("1h")) => Ok("1h"),
        Some(_) => Err(violation(format!("{at}.ephemeral.ttl: Input should be '5m' or '1h'"))),
    }
}

/// Prompt caching's rules: `cache_control` well formed, never on a thinking block (cached with
/// its turn; the schema has no such field there), at most four in a request (the top-level one
/// of automatic caching counts), and a `1h` entry never after a `5m` one in the order the
/// cache reads the prompt (tools, system, messages).
fn check_breakpoints(object: &serde_json::Map<String, Value>) -> Result<(), Violation> {
    let mut marked: Vec<(String, Value)> = Vec::new();
    let mut mark = |block: &Value, at: String| {
        if let Some(control) = block.get("cache_control") {
            marked.push((format!("{at}.cache_control"), control.clone()));
        }
    };
    for (i, tool) in object.get("tools").and_then(Value::as_array).into_iter().flatten().enumerate() {
        mark(tool, format!("tools.{i}.custom"));
    }
    for (i, block) in object.get("system").and_then(Value::as_array).into_iter().flatten().enumerate() {
        mark(block, format!("system.{i}.text"));
    }
    let messages = object.get("messages").and_then(Value::as_array).into_iter().flatten();
    for (i, message) in messages.enumerate() {
        for (j, block) in message.get("content").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
            let at = format!("messages.{i}.content.{j}.{kind}");
            if matches!(kind, "thinking" | "redacted_thinking") && block.get("cache_control").is_some() {
                return Err(violation(format!("{at}.cache_control: Extra inputs are not permitted")));
            }
            mark(block, at.clone());
            for (k, part) in block.get("content").and_then(Value::as_array).into_iter().flatten().enumerate() {
                mark(part, format!("{at}.content.{k}"));
            }
        }
    }
    if let Some(control) = object.get("cache_control") {
        marked.push(("cache_control".into(), control.clone()));
    }
    let mut ttls = Vec::new();
    for (at, control) in &marked {
        ttls.push(check_cache_control(control, at)?);
    }
    if marked.len() > MAX_BREAKPOINTS {
        return Err(violation(format!(
            "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
            marked.len()
        )));
    }
    // The top-level breakpoint stands at the end of the prompt; the blocks' come in order.
    if ttls.windows(2).any(|pair| pair == ["5m", "1h"]) {
        return Err(violation(
            "cache_control: a ttl of '1h' may not come after a ttl of '5m' (tools, then system, then messages)",
        ));
    }
    Ok(())
}

/// What extended thinking rules out: a model from before it, sampling changes (`temperature`
/// other than 1, `top_k`, `top_p` below 0.95) and a `tool_choice` that forces a tool.
fn check_thinking_compatible(object: &serde_json::Map<String, Value>) -> Result<(), Violation> {
    let model = object.get("model").and_then(Value::as_str).unwrap_or_default();
    let before = ["claude-2", "claude-instant", "claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-3-5"];
    if before.iter().any(|prefix| model.starts_with(prefix)) {
        return Err(violation(format!("'{model}' does not support thinking.")));
    }
    if object.get("temperature").is_some_and(|t| t.as_f64() != Some(1.0)) {
        return Err(violation(
            "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking",
        ));
    }
    if object.contains_key("top_k") {
        return Err(violation("`top_k` is not supported when thinking is enabled"));
    }
    if object.get("top_p").is_some_and(|p| p.as_f64().is_none_or(|p| p < 0.95)) {
        return Err(violation("`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled"));
    }
    let forced = object.get("tool_choice").and_then(|c| c.get("type")).and_then(Value::as_str);
    if matches!(forced, Some("any" | "tool")) {
        return Err(violation("Thinking may not be enabled when tool_choice forces tool use."));
    }
    Ok(())
}

/// Checks a request that names betas, as the API does for Claude Code's: the fields its
/// betas add pass (`context_management`, `output_config`, adaptive thinking, tools with
/// `defer_loading`; none of which the documented rules refuse), and so do the mid-conversation
/// `system` turns, which are taken out before the documented rules check the rest.
pub fn check_beta(body: &Value) -> Result<(), Violation> {
    let mut body = body.clone();
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        messages.retain(|m| m.get("role").and_then(Value::as_str) != Some("system"));
    }
    check(&body)
}

fn check_tools(tools: Option<&Value>) -> Result<(), Violation> {
    let Some(tools) = tools else { return Ok(()) };
    let Some(tools) = tools.as_array() else { return Err(violation("tools: Input should be a valid list")) };
    let mut names = BTreeSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        if !is_plain_name(name, 64) {
            return Err(violation(format!(
                "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )));
        }
        if !names.insert(name) {
            return Err(violation("tools: Tool names must be unique."));
        }
        // A server tool (the tool search tool) has a type and no schema.
        if tool_search::anthropic_search_name(tool).is_some() {
            continue;
        }
        let schema = tool.get("input_schema");
        if !schema.is_some_and(Value::is_object) {
            return Err(violation(format!("tools.{i}.custom.input_schema: Field required")));
        }
        if schema.and_then(|s| s.get("type")).and_then(Value::as_str) != Some("object") {
            return Err(violation(format!("tools.{i}.custom.input_schema.type: Input should be 'object'")));
        }
    }
    Ok(())
}

fn check_text_block(block: &Value, at: &str) -> Result<(), Violation> {
    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
    if text.is_empty() {
        return Err(violation(format!("{at}.text: text content blocks must be non-empty")));
    }
    if text.trim().is_empty() {
        return Err(violation(format!("{at}.text: text content blocks must contain non-whitespace text")));
    }
    Ok(())
}

/// The blocks of a message (a string content is one text block).
fn blocks(message: &Value, at: &str, last_assistant: bool) -> Result<Vec<Value>, Violation> {
    match message.get("content") {
        Some(Value::String(text)) => {
            if text.is_empty() && !last_assistant {
                return Err(violation(format!(
                    "{at}: all messages must have non-empty content except for the optional final assistant message"
                )));
            }
            Ok(if text.is_empty() { Vec::new() } else { vec![serde_json::json!({"type": "text", "text": text})] })
        }
        Some(Value::Array(blocks)) => {
            if blocks.is_empty() && !last_assistant {
                return Err(violation(format!(
                    "{at}: all messages must have non-empty content except for the optional final assistant message"
                )));
            }
            Ok(blocks.clone())
        }
        _ => Err(violation(format!("{at}.content: Field required"))),
    }
}

/// An `image` block: a base64 source of a format the API takes, whose bytes are that format.
fn check_image_block(block: &Value, at: &str) -> Result<(), Violation> {
    let source = block.get("source").unwrap_or(&Value::Null);
    match source.get("type").and_then(Value::as_str) {
        Some("base64") => {}
        Some("url") if source.get("url").is_some_and(Value::is_string) => return Ok(()),
        _ => {
            return Err(violation(format!(
                "{at}.image.source: Input tag found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'"
            )));
        }
    }
    let media_type = source.get("media_type").and_then(Value::as_str).unwrap_or("");
    if !crate::images::MEDIA_TYPES.contains(&media_type) {
        return Err(violation(format!(
            "{at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
        )));
    }
    let data = source.get("data").and_then(Value::as_str).unwrap_or("");
    let bytes = crate::images::decode(data)
        .map_err(|_| violation(format!("{at}.image.source.base64.data: The image data is not valid base64")))?;
    if crate::images::media_type_of(&bytes) != Some(media_type) {
        return Err(violation(format!(
            "{at}.image.source.base64.data: Image does not match the provided media type {media_type}"
        )));
    }
    if bytes.len() > crate::images::MAX_IMAGE_BYTES {
        return Err(violation(format!("{at}.image.source.base64: image exceeds 5 MB maximum")));
    }
    Ok(())
}

fn check_messages(messages: &[Value], thinking: bool) -> Result<(), Violation> {
    if messages.is_empty() {
        return Err(violation("messages: at least one message is required"));
    }
    let mut previous_role = "";
    // tool_use ids of the previous assistant message, which the next message must answer.
    let mut open_calls: Vec<String> = Vec::new();
    let mut seen_ids: BTreeSet<String> = BTreeSet::new();
    for (i, message) in messages.iter().enumerate() {
        let at = format!("messages.{i}");
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if role != "user" && role != "assistant" {
            return Err(violation(format!("{at}.role: Input should be 'user' or 'assistant'")));
        }
        if i == 0 && role != "user" {
            return Err(violation("messages: first message must use the \"user\" role"));
        }
        if role == previous_role {
            return Err(violation(format!(
                "messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"{role}\" roles in a row"
            )));
        }
        let last = i + 1 == messages.len();
        let blocks = blocks(message, &at, last && role == "assistant")?;
        let mut answered: Vec<String> = Vec::new();
        let mut calls: Vec<String> = Vec::new();
        let mut seen_other = false;
        for (j, block) in blocks.iter().enumerate() {
            let at = format!("{at}.content.{j}");
            match block.get("type").and_then(Value::as_str).unwrap_or("") {
                "text" => {
                    check_text_block(block, &at)?;
                    seen_other = true;
                }
                "thinking" | "redacted_thinking" if role == "assistant" => {}
                // The tool search's blocks (checked by `tool_search::anthropic_history`).
                "server_tool_use" | "tool_search_tool_result" if role == "assistant" => {}
                "image" if role == "user" => {
                    check_image_block(block, &at)?;
                    seen_other = true;
                }
                "document" if role == "user" => seen_other = true,
                "tool_use" if role == "assistant" => {
                    let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                    if !is_plain_name(id, usize::MAX) {
                        return Err(violation(format!(
                            "{at}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                        )));
                    }
                    if !is_plain_name(block.get("name").and_then(Value::as_str).unwrap_or(""), 64) {
                        return Err(violation(format!(
                            "{at}.tool_use.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
                        )));
                    }
                    if !block.get("input").is_some_and(Value::is_object) {
                        return Err(violation(format!("{at}.tool_use.input: Input should be a valid dictionary")));
                    }
                    if !seen_ids.insert(id.to_string()) {
                        return Err(violation(format!("{at}: `tool_use` ids must be unique")));
                    }
                    calls.push(id.to_string());
                }
                "tool_result" if role == "user" => {
                    let id = block.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                    if !is_plain_name(id, usize::MAX) {
                        return Err(violation(format!(
                            "{at}.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                        )));
                    }
                    if !open_calls.iter().any(|c| c == id) || answered.iter().any(|a| a == id) {
                        return Err(violation(format!(
                            "{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        )));
                    }
                    if seen_other {
                        return Err(violation(format!(
                            "{at}: `tool_result` blocks must come first in the user message content, before any other content"
                        )));
                    }
                    answered.push(id.to_string());
                }
                other => {
                    return Err(violation(format!(
                        "{at}.type: Input tag '{other}' found using 'type' is not allowed in a {role} message"
                    )));
                }
            }
        }
        let missing: Vec<&str> = open_calls.iter().filter(|c| !answered.contains(c)).map(String::as_str).collect();
        if !missing.is_empty() {
            return Err(violation(format!(
                "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                i - 1,
                missing.join(", ")
            )));
        }
        if thinking && role == "assistant" && !calls.is_empty() && i + 2 == messages.len() {
            // The assistant turn of the tool loop in progress must open with its thinking.
            let first = blocks.first().and_then(|b| b.get("type")).and_then(Value::as_str).unwrap_or("");
            if first != "thinking" && first != "redacted_thinking" {
                return Err(violation(format!(
                    "{at}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block. We recommend you include thinking blocks from previous turns."
                )));
            }
        }
        open_calls = calls;
        previous_role = role;
    }
    if !open_calls.is_empty() {
        return Err(violation(format!(
            "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
            messages.len() - 1,
            open_calls.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;

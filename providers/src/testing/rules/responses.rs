//! OpenAI Responses API request rules (`POST /v1/responses`, what Codex speaks), worded as
//! the API words them. The fake stores no responses, so it is a `store: false` server: every
//! call a `function_call_output` answers must be in the same request's `input`.

use std::collections::HashSet;

use serde_json::Value;

use super::{Vendor, Violation, is_plain_name, json_type};

fn violation(message: impl Into<String>) -> Violation {
    Violation::new(Vendor::OpenaiResponses, message)
}

/// The input item types the API takes.
const ITEM_TYPES: &[&str] = &[
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "reasoning",
    "web_search_call",
    "compaction",
    "item_reference",
];

/// The tool types the API takes.
const TOOL_TYPES: &[&str] = &[
    "function",
    "custom",
    "namespace",
    "web_search",
    "web_search_preview",
    "file_search",
    "local_shell",
    "image_generation",
    "code_interpreter",
    "mcp",
    "computer_use_preview",
    "tool_search",
];

/// Checks a request body; the first broken rule is the error.
pub fn check(body: &Value) -> Result<(), Violation> {
    let Some(object) = body.as_object() else {
        return Err(violation("We could not parse the JSON body of your request."));
    };
    match object.get("model") {
        Some(Value::String(model)) if !model.is_empty() => {}
        _ => return Err(violation("Missing required parameter: 'model'.").param("model")),
    }
    if let Some(id) = object.get("previous_response_id").and_then(Value::as_str) {
        return Err(violation(format!("Previous response with id '{id}' not found.")).param("previous_response_id"));
    }
    if object.get("stream_options").is_some_and(|o| !o.is_null()) && object.get("stream") != Some(&Value::Bool(true)) {
        return Err(violation("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
            .param("stream_options"));
    }
    if let Some(max) = object.get("max_output_tokens")
        && max.as_u64().is_none_or(|n| n < 16)
    {
        return Err(violation("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16.")
            .param("max_output_tokens"));
    }
    check_choice(object.get("reasoning"), "effort", &["none", "minimal", "low", "medium", "high", "xhigh"])?;
    check_choice(object.get("reasoning"), "summary", &["auto", "concise", "detailed", "none"])?;
    check_choice(object.get("text"), "verbosity", &["low", "medium", "high"])?;
    check_tools(object.get("tools"))?;
    match object.get("input") {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(items)) => check_items(items),
        Some(other) => Err(violation(format!(
            "Invalid type for 'input': expected one of a string or an array of input items, but got {}.",
            json_type(other)
        ))
        .param("input")),
    }
}

/// `object.field`, when present, is one of `known`.
fn check_choice(object: Option<&Value>, field: &str, known: &[&str]) -> Result<(), Violation> {
    let Some(value) = object.and_then(|o| o.get(field)).filter(|v| !v.is_null()) else { return Ok(()) };
    if value.as_str().is_some_and(|v| known.contains(&v)) {
        return Ok(());
    }
    let supported: Vec<String> = known.iter().map(|k| format!("'{k}'")).collect();
    Err(violation(format!("Invalid value: '{}'. Supported values are: {}.", value, supported.join(", ")))
        .param(field.to_string()))
}

fn check_tools(tools: Option<&Value>) -> Result<(), Violation> {
    let Some(tools) = tools else { return Ok(()) };
    let Some(tools) = tools.as_array() else {
        return Err(violation(format!("Invalid type for 'tools': expected an array, but got {}.", json_type(tools)))
            .param("tools"));
    };
    for (i, tool) in tools.iter().enumerate() {
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or("");
        if !TOOL_TYPES.contains(&kind) {
            return Err(violation(format!(
                "Invalid value: '{kind}'. Supported values are: {}.",
                TOOL_TYPES.join(", ")
            ))
            .param(format!("tools[{i}].type")));
        }
        if matches!(kind, "function" | "custom" | "namespace") {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
            if !is_plain_name(name, 64) {
                return Err(violation(format!(
                    "Invalid 'tools[{i}].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
                ))
                .param(format!("tools[{i}].name")));
            }
        }
        if kind == "function"
            && let Some(parameters) = tool.get("parameters").filter(|p| !p.is_null() && !p.is_object())
        {
            return Err(violation(format!(
                "Invalid type for 'tools[{i}].parameters': expected an object, but got {}.",
                json_type(parameters)
            ))
            .param(format!("tools[{i}].parameters")));
        }
        if kind == "namespace" {
            check_tools(tool.get("tools"))?;
        }
    }
    Ok(())
}

fn check_items(items: &[Value]) -> Result<(), Violation> {
    let mut calls: HashSet<&str> = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        // A message may leave out its type.
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("message");
        if !ITEM_TYPES.contains(&kind) {
            return Err(violation(format!("Invalid value: '{kind}'.")).param(format!("input[{i}].type")));
        }
        let call_id = item.get("call_id").and_then(Value::as_str);
        match kind {
            "message" => check_message(i, item)?,
            "function_call" | "custom_tool_call" | "local_shell_call" => match call_id {
                Some(id) if !id.is_empty() => {
                    calls.insert(id);
                }
                _ => {
                    return Err(violation(format!("Missing required parameter: 'input[{i}].call_id'."))
                        .param(format!("input[{i}].call_id")));
                }
            },
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                let id = call_id.unwrap_or("");
                if !calls.contains(id) {
                    return Err(violation(format!("No tool call found for function call output with call_id {id}."))
                        .param("input"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_message(i: usize, item: &Value) -> Result<(), Violation> {
    let role = item.get("role").and_then(Value::as_str).unwrap_or("");
    let parts: &[&str] = match role {
        "user" | "system" | "developer" => &["input_text", "input_image", "input_file"],
        "assistant" => &["output_text", "refusal"],
        _ => {
            return Err(violation(format!(
                "Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'."
            ))
            .param(format!("input[{i}].role")));
        }
    };
    match item.get("content") {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(content)) => {
            for (j, part) in content.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
                if !parts.contains(&kind) {
                    return Err(violation(format!(
                        "Invalid value: '{kind}'. Supported values are: {}.",
                        parts.iter().map(|p| format!("'{p}'")).collect::<Vec<_>>().join(", ")
                    ))
                    .param(format!("input[{i}].content[{j}]")));
                }
                if kind == "input_image" {
                    check_input_image(part, &format!("input[{i}].content[{j}]"))?;
                }
            }
            Ok(())
        }
        _ => Err(violation(format!("Missing required parameter: 'input[{i}].content'."))
            .param(format!("input[{i}].content"))),
    }
}

/// An `input_image`: an `image_url` (http(s), or a base64 data URL of an image type) or a
/// `file_id`; `detail` `low`, `high` or `auto`.
fn check_input_image(part: &Value, at: &str) -> Result<(), Violation> {
    if let Some(detail) = part.get("detail").and_then(Value::as_str)
        && !["low", "high", "auto"].contains(&detail)
    {
        return Err(violation(format!("Invalid value: '{detail}'. Supported values are: 'low', 'high', and 'auto'."))
            .param(format!("{at}.detail")));
    }
    let url = part.get("image_url").and_then(Value::as_str);
    if url.is_none() && part.get("file_id").and_then(Value::as_str).is_none() {
        return Err(
            violation(format!("Missing required parameter: '{at}.image_url'.")).param(format!("{at}.image_url"))
        );
    }
    let Some(url) = url else { return Ok(()) };
    if url.starts_with("https://") || url.starts_with("http://") {
        return Ok(());
    }
    let data = url.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,"));
    match data {
        Some((media_type, data)) if media_type.starts_with("image/") && crate::images::decode(data).is_ok() => Ok(()),
        _ => Err(violation(format!(
            "Invalid '{at}.image_url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value that is not one."
        ))
        .param(format!("{at}.image_url"))),
    }
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;

//! OpenAI Chat Completions request rules (`POST /v1/chat/completions`), worded as the API
//! words them.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Vendor, Violation, is_plain_name, json_type};

/// The longest tool-call id the API takes.
pub const MAX_TOOL_CALL_ID: usize = 40;

fn violation(message: impl Into<String>) -> Violation {
    Violation::new(Vendor::Openai, message)
}

/// Models that take `max_completion_tokens` and `reasoning_effort`, and refuse `max_tokens`.
pub fn is_reasoning_model(model: &str) -> bool {
    let model = model.rsplit('/').next().unwrap_or(model);
    ["o1", "o3", "o4", "gpt-5"].iter().any(|prefix| model.starts_with(prefix))
}

/// Checks a request body; the first broken rule is the error.
pub fn check(body: &Value) -> Result<(), Violation> {
    let Some(object) = body.as_object() else {
        return Err(violation("We could not parse the JSON body of your request."));
    };
    let model = match object.get("model") {
        Some(Value::String(model)) if !model.is_empty() => model.as_str(),
        _ => return Err(violation("you must provide a model parameter").param("model")),
    };
    if object.get("stream_options").is_some_and(|o| !o.is_null()) && object.get("stream") != Some(&Value::Bool(true)) {
        return Err(violation("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
            .param("stream_options"));
    }
    if is_reasoning_model(model) {
        if object.contains_key("max_tokens") {
            return Err(violation(
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            )
            .param("max_tokens"));
        }
    } else if object.contains_key("reasoning_effort") && model.starts_with("gpt-") {
        return Err(violation("Unsupported parameter: 'reasoning_effort' is not supported with this model.")
            .param("reasoning_effort"));
    }
    if let Some(effort) = object.get("reasoning_effort") {
        let known = ["minimal", "low", "medium", "high"];
        if !effort.as_str().is_some_and(|e| known.contains(&e)) {
            return Err(violation(format!(
                "Invalid value: '{}'. Supported values are: 'minimal', 'low', 'medium', and 'high'.",
                effort.as_str().unwrap_or_default()
            ))
            .param("reasoning_effort"));
        }
        if effort == "minimal" && !model.rsplit('/').next().unwrap_or(model).starts_with("gpt-5") {
            return Err(violation(
                "Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. Supported values are: 'low', 'medium', and 'high'.",
            )
            .param("reasoning_effort"));
        }
    }
    for key in ["max_tokens", "max_completion_tokens"] {
        if let Some(value) = object.get(key)
            && value.as_u64().is_none_or(|n| n < 1)
        {
            return Err(violation(format!("Invalid '{key}': integer below minimum value.")).param(key));
        }
    }
    check_tools(object.get("tools"))?;
    check_response_format(object.get("response_format"))?;
    let messages = match object.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        Some(Value::Array(_)) => return Err(violation("[] is too short - 'messages'").param("messages")),
        _ => return Err(violation("Missing required parameter: 'messages'.").param("messages")),
    };
    check_messages(messages)?;
    check_parts(model, messages)
}

/// The parts of array contents: `text` parts with text anywhere, `image_url` parts only in
/// user messages of a model that sees, as an http(s) URL or an image data URL in base64.
fn check_parts(model: &str, messages: &[Value]) -> Result<(), Violation> {
    let upstream = model.rsplit('/').next().unwrap_or(model);
    for (i, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let Some(parts) = message.get("content").and_then(Value::as_array) else { continue };
        for (j, part) in parts.iter().enumerate() {
            let at = format!("messages[{i}].content[{j}]");
            match part.get("type").and_then(Value::as_str).unwrap_or("") {
                "text" if part.get("text").is_some_and(Value::is_string) => {}
                "image_url" if role != "user" => {
                    return Err(violation(format!(
                        "Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', but this message with role '{role}' contains an image URL."
                    ))
                    .param(format!("messages.[{i}].content.[{j}].type")));
                }
                "image_url" => {
                    if !crate::images::builtin(crate::config::ProviderKind::Openai, upstream) {
                        return Err(violation("Invalid content type. image_url is only supported by certain models.")
                            .param(format!("messages.[{i}].content.[{j}].type")));
                    }
                    let url = part.pointer("/image_url/url").and_then(Value::as_str).unwrap_or("");
                    check_image_url(url, &at)?;
                }
                other => {
                    return Err(violation(format!(
                        "Invalid value: '{other}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'."
                    ))
                    .param(format!("messages.[{i}].content.[{j}].type")));
                }
            }
        }
    }
    Ok(())
}

fn check_image_url(url: &str, at: &str) -> Result<(), Violation> {
    if url.starts_with("https://") || url.starts_with("http://") {
        return Ok(());
    }
    let unsupported = || {
        violation(
            "You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
        )
        .param(format!("{at}.image_url.url"))
    };
    let Some(superpi_proto::ContentBlock::Image { media_type, data: Some(data), .. }) =
        superpi_proto::ContentBlock::image_from_data_url(url)
    else {
        return Err(violation(format!("Invalid '{at}.image_url.url': expected an http(s) URL or a base64 data URL."))
            .param(format!("{at}.image_url.url")));
    };
    let bytes = crate::images::decode(&data).map_err(|_| unsupported())?;
    if !crate::images::MEDIA_TYPES.contains(&media_type.as_str()) || crate::images::media_type_of(&bytes).is_none() {
        return Err(unsupported());
    }
    Ok(())
}

/// `response_format`: `text`, `json_object`, or `json_schema` with its `json_schema` object.
fn check_response_format(format: Option<&Value>) -> Result<(), Violation> {
    let Some(format) = format else { return Ok(()) };
    match format.get("type").and_then(Value::as_str) {
        Some("text" | "json_object") => Ok(()),
        Some("json_schema") => match format.get("json_schema") {
            Some(inner) if inner.is_object() => {
                super::check_json_schema_format(Vendor::Openai, inner, "response_format.json_schema")
            }
            _ => Err(violation("Missing required parameter: 'response_format.json_schema'.")
                .param("response_format.json_schema")),
        },
        other => Err(violation(format!(
            "Invalid value: '{}'. Supported values are: 'json_object', 'json_schema', and 'text'.",
            other.unwrap_or_default()
        ))
        .param("response_format.type")),
    }
}

fn check_tools(tools: Option<&Value>) -> Result<(), Violation> {
    let Some(tools) = tools else { return Ok(()) };
    let Some(tools) = tools.as_array() else {
        return Err(violation(format!("Invalid type for 'tools': expected an array, but got {}.", json_type(tools)))
            .param("tools"));
    };
    if tools.is_empty() {
        return Err(violation("[] is too short - 'tools'").param("tools"));
    }
    for (i, tool) in tools.iter().enumerate() {
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            return Err(
                violation(format!("Missing required parameter: 'tools[{i}].type'.")).param(format!("tools[{i}].type"))
            );
        }
        let function = tool.get("function").unwrap_or(&Value::Null);
        let name = function.get("name").and_then(Value::as_str).unwrap_or("");
        if !is_plain_name(name, 64) {
            return Err(violation(format!(
                "Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
            ))
            .param(format!("tools[{i}].function.name")));
        }
        if let Some(parameters) = function.get("parameters") {
            let kind = parameters.get("type").and_then(Value::as_str);
            if !parameters.is_object() || kind != Some("object") {
                return Err(violation(format!(
                    "Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{}\"'.",
                    kind.unwrap_or("None")
                ))
                .param(format!("tools[{i}].function.parameters")));
            }
        }
    }
    Ok(())
}

/// Content of a message: a string, or an array of parts.
fn content_present(message: &Value) -> bool {
    matches!(message.get("content"), Some(Value::String(_)) | Some(Value::Array(_)))
}

fn check_messages(messages: &[Value]) -> Result<(), Violation> {
    // The tool_call ids of the last assistant message not yet answered.
    let mut waiting: Vec<String> = Vec::new();
    let mut waiting_from = 0;
    let mut answerable: BTreeSet<String> = BTreeSet::new();
    for (i, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if role != "tool" && !waiting.is_empty() {
            return Err(unanswered(waiting_from, &waiting));
        }
        match role {
            "system" | "developer" | "user" => {
                if !content_present(message) {
                    return Err(violation(format!(
                        "Invalid type for 'messages[{i}].content': expected one of a string or array of objects, but got {} instead.",
                        json_type(message.get("content").unwrap_or(&Value::Null))
                    ))
                    .param(format!("messages.[{i}].content")));
                }
                answerable.clear();
            }
            "assistant" => {
                let calls = message.get("tool_calls").and_then(Value::as_array).filter(|c| !c.is_empty());
                if calls.is_none() && !content_present(message) {
                    return Err(violation(format!(
                        "Invalid value for 'messages[{i}]': an assistant message needs 'content' or 'tool_calls'."
                    ))
                    .param(format!("messages.[{i}].content")));
                }
                answerable.clear();
                for (j, call) in calls.into_iter().flatten().enumerate() {
                    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    if id.is_empty() {
                        return Err(violation(format!(
                            "Missing required parameter: 'messages[{i}].tool_calls[{j}].id'."
                        ))
                        .param(format!("messages.[{i}].tool_calls.[{j}].id")));
                    }
                    if id.len() > MAX_TOOL_CALL_ID {
                        return Err(violation(format!(
                            "Invalid 'messages[{i}].tool_calls[{j}].id': string too long. Expected a string with maximum length {MAX_TOOL_CALL_ID}, but got a string with length {} instead.",
                            id.len()
                        ))
                        .param(format!("messages.[{i}].tool_calls.[{j}].id")));
                    }
                    let function = call.get("function").unwrap_or(&Value::Null);
                    if call.get("type").and_then(Value::as_str) != Some("function")
                        || function.get("name").and_then(Value::as_str).is_none_or(str::is_empty)
                        || !function.get("arguments").is_some_and(Value::is_string)
                    {
                        return Err(violation(format!(
                            "Invalid 'messages[{i}].tool_calls[{j}]': expected type 'function' with a function name and string arguments."
                        ))
                        .param(format!("messages.[{i}].tool_calls.[{j}]")));
                    }
                    waiting.push(id.to_string());
                    answerable.insert(id.to_string());
                }
                waiting_from = i;
            }
            "tool" => {
                let id = message.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                if !answerable.contains(id) {
                    return Err(violation(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    )
                    .param(format!("messages.[{i}].role")));
                }
                if !content_present(message) {
                    return Err(violation(format!(
                        "Invalid type for 'messages[{i}].content': expected one of a string or array of objects, but got {} instead.",
                        json_type(message.get("content").unwrap_or(&Value::Null))
                    ))
                    .param(format!("messages.[{i}].content")));
                }
                waiting.retain(|w| w != id);
            }
            other => {
                return Err(violation(format!(
                    "Invalid value: '{other}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."
                ))
                .param(format!("messages.[{i}].role")));
            }
        }
    }
    if !waiting.is_empty() {
        return Err(unanswered(waiting_from, &waiting));
    }
    Ok(())
}

fn unanswered(at: usize, ids: &[String]) -> Violation {
    violation(format!(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
        ids.join(", ")
    ))
    .param(format!("messages.[{at}].role"))
}

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;

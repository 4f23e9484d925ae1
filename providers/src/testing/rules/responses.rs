//! OpenAI Responses API request rules (`POST /v1/responses`, what superpi's Responses wire and
//! Codex speak), worded as the API words them. The fake stores no responses, so it is a `store:
//! false` server: every call a `function_call_output` answers must be in the same request's
//! `input`, every call there needs its output, and a reasoning item comes back whole (its
//! `encrypted_content`, which [`encrypted_reasoning`] makes and [`check`] verifies), never as an
//! id to look up.

use std::collections::HashSet;

use serde_json::Value;

use super::{Vendor, Violation, is_plain_name, json_type, tool_search};

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
    "tool_search_call",
    "tool_search_output",
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

/// What makes the fake's encrypted reasoning recognisable: the real API's starts `gAAAAA` too.
const ENCRYPTED_PREFIX: &str = "gAAAAA";
const ENCRYPTED_MARK: &str = "superpi-fake-reasoning:";

/// The `encrypted_content` the fake gives reasoning item `item_id`.
pub fn encrypted_reasoning(item_id: &str) -> String {
    format!("{ENCRYPTED_PREFIX}{}", crate::images::encode(format!("{ENCRYPTED_MARK}{item_id}").as_bytes()))
}

/// The item id an `encrypted_content` of the fake's stands for; `None` for one it did not make.
pub fn reasoning_item_of(encrypted: &str) -> Option<String> {
    let bytes = crate::images::decode(encrypted.strip_prefix(ENCRYPTED_PREFIX)?).ok()?;
    String::from_utf8(bytes).ok()?.strip_prefix(ENCRYPTED_MARK).map(str::to_string)
}

/// The `include` values the API takes.
const INCLUDES: &[&str] = &[
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "message.input_image.image_url",
    "message.output_text.logprobs",
    "reasoning.encrypted_content",
    "web_search_call.action.sources",
    "web_search_call.results",
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
    check_text_format(object.get("text"))?;
    check_include(object.get("include"))?;
    let store = object.get("store").and_then(Value::as_bool).unwrap_or(true);
    let model = object.get("model").and_then(Value::as_str).unwrap_or_default();
    let tools = object.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let catalog = tool_search::responses_catalog(model, tools)?;
    match object.get("input") {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(items)) => {
            check_items(items, store)?;
            tool_search::responses_items(items, &catalog)
        }
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

fn check_include(include: Option<&Value>) -> Result<(), Violation> {
    let Some(include) = include.filter(|i| !i.is_null()) else { return Ok(()) };
    let Some(values) = include.as_array() else {
        return Err(violation(format!(
            "Invalid type for 'include': expected an array of strings, but got {}.",
            json_type(include)
        ))
        .param("include"));
    };
    for (i, value) in values.iter().enumerate() {
        if !value.as_str().is_some_and(|v| INCLUDES.contains(&v)) {
            let supported: Vec<String> = INCLUDES.iter().map(|k| format!("'{k}'")).collect();
            return Err(violation(format!("Invalid value: {value}. Supported values are: {}.", supported.join(", ")))
                .param(format!("include[{i}]")));
        }
    }
    Ok(())
}

/// A function tool with `strict` (the API's default) takes only a strict schema: every object
/// closed (`additionalProperties: false`) with every property required.
fn check_strict(i: usize, tool: &Value) -> Result<(), Violation> {
    if tool.get("strict").and_then(Value::as_bool) == Some(false) {
        return Ok(());
    }
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
    let Some(schema) = tool.get("parameters").filter(|p| p.is_object()) else { return Ok(()) };
    let refused = |context: &str, rule: String| {
        violation(format!("Invalid schema for function '{name}': In context=({context}), {rule}"))
            .param(format!("tools[{i}].parameters"))
            .code("invalid_function_parameters")
    };
    let mut pending = vec![(String::new(), schema)];
    while let Some((context, schema)) = pending.pop() {
        if schema.get("type").and_then(Value::as_str) == Some("object") {
            if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
                return Err(refused(
                    &context,
                    "'additionalProperties' is required to be supplied and to be false.".into(),
                ));
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            for (key, property) in properties.into_iter().flatten() {
                if !required.contains(&key.as_str()) {
                    return Err(refused(
                        &context,
                        format!(
                            "'required' is required to be supplied and to be an array including every key in properties. Missing '{key}'."
                        ),
                    ));
                }
                pending.push((format!("{context}'properties', '{key}'"), property));
            }
        }
        if let Some(items) = schema.get("items").filter(|s| s.is_object()) {
            pending.push((format!("{context}'items'"), items));
        }
    }
    Ok(())
}

/// `text.format`: `text`, `json_object`, or `json_schema` with its name and schema beside it.
fn check_text_format(text: Option<&Value>) -> Result<(), Violation> {
    let Some(format) = text.and_then(|t| t.get("format")) else { return Ok(()) };
    match format.get("type").and_then(Value::as_str) {
        Some("text" | "json_object") => Ok(()),
        Some("json_schema") => super::check_json_schema_format(Vendor::OpenaiResponses, format, "text.format"),
        other => Err(violation(format!(
            "Invalid value: '{}'. Supported values are: 'text', 'json_object', and 'json_schema'.",
            other.unwrap_or_default()
        ))
        .param("text.format.type")),
    }
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
        if kind == "function" {
            check_strict(i, tool)?;
        }
        if kind == "namespace" {
            check_tools(tool.get("tools"))?;
        }
    }
    Ok(())
}

fn check_items(items: &[Value], store: bool) -> Result<(), Violation> {
    let mut calls: Vec<&str> = Vec::new();
    let mut answered: HashSet<&str> = HashSet::new();
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
                    if kind == "function_call" {
                        check_call(i, item)?;
                    }
                    calls.push(id);
                }
                _ => {
                    return Err(violation(format!("Missing required parameter: 'input[{i}].call_id'."))
                        .param(format!("input[{i}].call_id")));
                }
            },
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                let id = call_id.unwrap_or("");
                if !calls.contains(&id) {
                    return Err(violation(format!("No tool call found for function call output with call_id {id}."))
                        .param("input"));
                }
                if kind == "function_call_output" && item.get("output").is_none_or(Value::is_null) {
                    return Err(violation(format!("Missing required parameter: 'input[{i}].output'."))
                        .param(format!("input[{i}].output")));
                }
                answered.insert(id);
            }
            "reasoning" => check_reasoning(i, item, store)?,
            _ => {}
        }
    }
    match calls.iter().find(|id| !answered.contains(*id)) {
        Some(id) => Err(violation(format!("No tool output found for function call {id}.")).param("input")),
        None => Ok(()),
    }
}

/// A `function_call` item: its `name` and its `arguments` as a string.
fn check_call(i: usize, item: &Value) -> Result<(), Violation> {
    for field in ["name", "arguments"] {
        match item.get(field) {
            Some(Value::String(_)) => {}
            None | Some(Value::Null) => {
                return Err(violation(format!("Missing required parameter: 'input[{i}].{field}'."))
                    .param(format!("input[{i}].{field}")));
            }
            Some(other) => {
                return Err(violation(format!(
                    "Invalid type for 'input[{i}].{field}': expected a string, but got {}.",
                    json_type(other)
                ))
                .param(format!("input[{i}].{field}")));
            }
        }
    }
    Ok(())
}

/// A `reasoning` item: its `summary`, and its `encrypted_content` as the fake made it; one
/// without it is an id to look up, which a server that stores nothing cannot.
fn check_reasoning(i: usize, item: &Value, store: bool) -> Result<(), Violation> {
    if !item.get("summary").is_some_and(Value::is_array) {
        return Err(violation(format!("Missing required parameter: 'input[{i}].summary'."))
            .param(format!("input[{i}].summary")));
    }
    match item.get("encrypted_content").and_then(Value::as_str) {
        Some(encrypted) if reasoning_item_of(encrypted).is_some() => Ok(()),
        Some(encrypted) => {
            let shown: String = encrypted.chars().take(4).collect();
            let tail: String = encrypted.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
            Err(violation(format!("The encrypted content {shown}...{tail} could not be verified."))
                .code("invalid_encrypted_content"))
        }
        None => {
            let id = item.get("id").and_then(Value::as_str).unwrap_or("");
            let why = if store {
                String::new()
            } else {
                " Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.".to_string()
            };
            Err(violation(format!("Item with id '{id}' not found.{why}")).status(404).param("input"))
        }
    }
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

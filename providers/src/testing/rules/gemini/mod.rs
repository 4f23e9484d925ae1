//! Gemini `generateContent` / `streamGenerateContent` request rules, worded as the API words
//! them. The body is read as the API's proto JSON: an unknown field is refused with
//! `Invalid JSON payload received. Unknown name ...`, both camelCase and snake_case names are
//! known.

mod schema;

use serde_json::{Map, Value};

use super::{Vendor, Violation};
use schema::check_schema;

pub(crate) fn violation(message: impl Into<String>) -> Violation {
    Violation::new(Vendor::Gemini, message)
}

/// `Invalid JSON payload received. Unknown name "NAME" at 'PATH': Cannot find field.`
pub(crate) fn unknown_name(name: &str, at: &str) -> Violation {
    if at.is_empty() {
        violation(format!("Invalid JSON payload received. Unknown name \"{name}\": Cannot find field."))
    } else {
        violation(format!("Invalid JSON payload received. Unknown name \"{name}\" at '{at}': Cannot find field."))
    }
}

/// The proto field name of a JSON key (`functionDeclarations` and `function_declarations` are
/// the same field).
pub(crate) fn proto_name(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Refuses keys that are not fields of the message at `at`.
pub(crate) fn known_fields(object: &Map<String, Value>, fields: &[&str], at: &str) -> Result<(), Violation> {
    for key in object.keys() {
        if !fields.contains(&proto_name(key).as_str()) {
            return Err(unknown_name(key, at));
        }
    }
    Ok(())
}

pub(crate) fn field<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object.iter().find(|(key, _)| proto_name(key) == name).map(|(_, value)| value)
}

fn join(at: &str, name: &str) -> String {
    if at.is_empty() { name.to_string() } else { format!("{at}.{name}") }
}

/// The key the API needs (`x-goog-api-key`, or `key=` in the query).
pub fn check_key(header: impl Fn(&str) -> Option<String>, query: &str) -> Result<(), Violation> {
    let in_query = query.split('&').any(|pair| pair.strip_prefix("key=").is_some_and(|k| !k.is_empty()));
    if in_query || header("x-goog-api-key").is_some_and(|k| !k.is_empty()) {
        return Ok(());
    }
    Err(violation(
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    )
    .status(403))
}

/// `^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`.
pub fn is_function_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    first_ok && name.len() <= 64 && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// Gemini 3's `thinkingLevel`: not with a budget, only on Gemini 3 models, and among the
/// model's levels (Pro: `low`, `high`; Flash also `minimal` and `medium`).
fn check_thinking_level(model: &str, body: &Value) -> Result<(), Violation> {
    let Some(thinking) = body.get("generationConfig").and_then(|c| c.get("thinkingConfig")).and_then(Value::as_object)
    else {
        return Ok(());
    };
    let level = field(thinking, "thinking_level");
    let Some(level) = level else { return Ok(()) };
    if field(thinking, "thinking_budget").is_some() {
        return Err(violation("You can only set one of thinking budget and thinking level."));
    }
    if !model.starts_with("gemini-3") {
        return Err(violation("Thinking level is not supported for this model."));
    }
    let levels: &[&str] = if model.contains("-pro") { &["low", "high"] } else { &["minimal", "low", "medium", "high"] };
    let name = level.as_str().map(str::to_ascii_lowercase).unwrap_or_default();
    if !levels.contains(&name.as_str()) {
        return Err(violation(format!(
            "Invalid value at 'generation_config.thinking_config.thinking_level' ({level}): this model supports {}",
            levels.join(", ")
        )));
    }
    Ok(())
}

/// Checks a request body for `model` (from the URL): [`check`], plus Gemini 3's rule that the
/// function calls of the turn in progress carry their thought signatures (the first call part
/// of each model step).
pub fn check_for(model: &str, body: &Value) -> Result<(), Violation> {
    check(body)?;
    check_thinking_level(model, body)?;
    let budget = body.pointer("/generationConfig/thinkingConfig/thinkingBudget").and_then(Value::as_i64);
    if let Some(budget) = budget.filter(|b| *b != -1) {
        let range = if model.starts_with("gemini-2.5-pro") {
            Some((128, 32_768))
        } else if model.starts_with("gemini-2.5-flash-lite") {
            (budget != 0).then_some((512, 24_576))
        } else if model.starts_with("gemini-2.5-flash") {
            Some((0, 24_576))
        } else {
            None
        };
        if budget == 0 && model.starts_with("gemini-2.5-pro") {
            return Err(violation("Budget 0 is invalid. This model only works in thinking mode."));
        }
        if let Some((low, high)) = range.filter(|(low, high)| budget < *low || budget > *high) {
            return Err(violation(format!(
                "The thinking budget {budget} is invalid. Please choose a value between {low} and {high}."
            )));
        }
    }
    if !model.starts_with("gemini-3") {
        return Ok(());
    }
    let contents = body.get("contents").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    // The turn in progress starts after the last user content that is not only function responses.
    let is_user_text = |c: &Value| {
        c.get("role").and_then(Value::as_str) == Some("user")
            && c.get("parts").and_then(Value::as_array).is_some_and(|parts| {
                parts.iter().any(|p| p.as_object().is_some_and(|p| field(p, "function_response").is_none()))
            })
    };
    let start = contents.iter().rposition(is_user_text).map_or(0, |i| i + 1);
    for content in &contents[start..] {
        let parts = content.get("parts").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let first_call =
            parts.iter().enumerate().find(|(_, p)| p.as_object().is_some_and(|p| field(p, "function_call").is_some()));
        if let Some((position, part)) = first_call {
            let signed = part
                .as_object()
                .is_some_and(|p| field(p, "thought_signature").and_then(Value::as_str).is_some_and(|s| !s.is_empty()));
            if !signed {
                let name = part.pointer("/functionCall/name").and_then(Value::as_str).unwrap_or("");
                return Err(violation(format!(
                    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{name}` , position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                    position + 1
                )));
            }
        }
    }
    Ok(())
}

/// Checks a request body; the first broken rule is the error.
pub fn check(body: &Value) -> Result<(), Violation> {
    let Some(object) = body.as_object() else {
        return Err(violation("Invalid JSON payload received. Expected an object."));
    };
    known_fields(
        object,
        &[
            "contents",
            "tools",
            "tool_config",
            "safety_settings",
            "system_instruction",
            "generation_config",
            "cached_content",
            "model",
        ],
        "",
    )?;
    if let Some(config) = field(object, "generation_config") {
        check_generation_config(config)?;
    }
    if let Some(system) = field(object, "system_instruction") {
        check_content(system, "system_instruction", true)?;
    }
    if let Some(tools) = field(object, "tools") {
        check_tools(tools)?;
    }
    let contents = match field(object, "contents") {
        Some(Value::Array(contents)) if !contents.is_empty() => contents,
        _ => return Err(violation("* GenerateContentRequest.contents: contents is not specified\n")),
    };
    for (i, content) in contents.iter().enumerate() {
        check_content(content, &format!("contents[{i}]"), false)?;
    }
    check_turns(contents)
}

fn check_generation_config(config: &Value) -> Result<(), Violation> {
    let Some(config) = config.as_object() else {
        return Err(violation(
            "Invalid value at 'generation_config' (type.googleapis.com/google.ai.generativelanguage.v1beta.GenerationConfig)",
        ));
    };
    known_fields(
        config,
        &[
            "stop_sequences",
            "response_mime_type",
            "response_schema",
            "response_json_schema",
            "candidate_count",
            "max_output_tokens",
            "temperature",
            "top_p",
            "top_k",
            "seed",
            "presence_penalty",
            "frequency_penalty",
            "response_logprobs",
            "logprobs",
            "thinking_config",
            "media_resolution",
        ],
        "generation_config",
    )?;
    if let Some(thinking) = field(config, "thinking_config") {
        let Some(thinking) = thinking.as_object() else {
            return Err(violation("Invalid value at 'generation_config.thinking_config'"));
        };
        known_fields(
            thinking,
            &["include_thoughts", "thinking_budget", "thinking_level"],
            "generation_config.thinking_config",
        )?;
    }
    Ok(())
}

/// A `Content`: an optional role and non-empty parts, each holding exactly one kind of data.
fn check_content(content: &Value, at: &str, system: bool) -> Result<(), Violation> {
    let Some(object) = content.as_object() else {
        return Err(violation(format!(
            "Invalid value at '{at}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content)"
        )));
    };
    known_fields(object, &["role", "parts"], at)?;
    if !system {
        let role = field(object, "role").and_then(Value::as_str).unwrap_or("");
        if role != "user" && role != "model" {
            return Err(violation("Please use a valid role: user, model."));
        }
    }
    let parts = match field(object, "parts") {
        Some(Value::Array(parts)) if !parts.is_empty() => parts,
        _ => {
            return Err(violation(format!("* GenerateContentRequest.{at}.parts: contents.parts must not be empty.\n")));
        }
    };
    for (j, part) in parts.iter().enumerate() {
        let at = format!("{at}.parts[{j}]");
        let Some(part) = part.as_object() else {
            return Err(violation(format!(
                "Invalid value at '{at}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Part)"
            )));
        };
        known_fields(
            part,
            &[
                "text",
                "inline_data",
                "function_call",
                "function_response",
                "file_data",
                "executable_code",
                "code_execution_result",
                "thought",
                "thought_signature",
                "video_metadata",
            ],
            &at,
        )?;
        let data = part
            .keys()
            .filter(|k| !matches!(proto_name(k).as_str(), "thought" | "thought_signature" | "video_metadata"))
            .count();
        if data != 1 {
            return Err(violation(format!(
                "* GenerateContentRequest.{at}.data: required oneof field 'data' must have one initialized field\n"
            )));
        }
        if let Some(text) = field(part, "text")
            && text.as_str().is_none_or(|t| t.is_empty())
        {
            return Err(violation(
                "Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.",
            ));
        }
        if let Some(inline) = field(part, "inline_data") {
            check_inline_data(inline, &format!("{at}.inline_data"))?;
        }
        if let Some(call) = field(part, "function_call") {
            let call = call.as_object().ok_or_else(|| violation(format!("Invalid value at '{at}.function_call'")))?;
            known_fields(call, &["id", "name", "args"], &format!("{at}.function_call"))?;
            if field(call, "name").and_then(Value::as_str).is_none_or(|n| n.is_empty()) {
                return Err(violation(format!(
                    "* GenerateContentRequest.{at}.function_call.name: Name cannot be empty.\n"
                )));
            }
            if field(call, "args").is_some_and(|a| !a.is_object()) {
                return Err(violation(format!(
                    "Invalid value at '{at}.function_call.args' (type.googleapis.com/google.protobuf.Struct)"
                )));
            }
        }
        if let Some(response) = field(part, "function_response") {
            let response =
                response.as_object().ok_or_else(|| violation(format!("Invalid value at '{at}.function_response'")))?;
            let at = format!("{at}.function_response");
            known_fields(response, &["id", "name", "response", "will_continue", "scheduling", "parts"], &at)?;
            if field(response, "name").and_then(Value::as_str).is_none_or(|n| n.is_empty()) {
                return Err(violation(format!("* GenerateContentRequest.{at}.name: Name cannot be empty.\n")));
            }
            if !field(response, "response").is_some_and(Value::is_object) {
                return Err(violation(format!(
                    "Invalid value at '{at}.response' (type.googleapis.com/google.protobuf.Struct)"
                )));
            }
        }
    }
    Ok(())
}

/// The image formats the API takes inline (no GIF).
const INLINE_IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"];

fn check_inline_data(inline: &Value, at: &str) -> Result<(), Violation> {
    let inline = inline.as_object().ok_or_else(|| {
        violation(format!("Invalid value at '{at}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Blob)"))
    })?;
    known_fields(inline, &["mime_type", "data"], at)?;
    let mime_type = field(inline, "mime_type").and_then(Value::as_str).unwrap_or("");
    if mime_type.starts_with("image/") && !INLINE_IMAGE_TYPES.contains(&mime_type) {
        return Err(violation(format!("Unsupported MIME type: {mime_type}")));
    }
    let data = field(inline, "data").and_then(Value::as_str).unwrap_or("");
    if data.is_empty() {
        return Err(violation(format!("* GenerateContentRequest.{at}.data: inline data must not be empty.\n")));
    }
    if crate::images::decode(data).is_err() {
        return Err(violation(format!("Invalid value at '{at}.data' (TYPE_BYTES), Base64 decoding failed")));
    }
    Ok(())
}

fn has_part(content: &Value, name: &str) -> usize {
    content
        .get("parts")
        .and_then(Value::as_array)
        .map(|parts| parts.iter().filter(|p| p.as_object().is_some_and(|p| field(p, name).is_some())).count())
        .unwrap_or(0)
}

/// Function calls and their responses, in turn order.
fn check_turns(contents: &[Value]) -> Result<(), Violation> {
    let role = |i: usize| contents[i].get("role").and_then(Value::as_str).unwrap_or("");
    for i in 0..contents.len() {
        let calls = has_part(&contents[i], "function_call");
        let responses = has_part(&contents[i], "function_response");
        if calls > 0 {
            if role(i) != "model" {
                return Err(violation("Please ensure that function call turns come from the model."));
            }
            if i == 0 || role(i - 1) != "user" {
                return Err(violation(
                    "Please ensure that function call turn comes immediately after a user turn or after a function response turn.",
                ));
            }
            let answered = contents.get(i + 1).map(|next| has_part(next, "function_response")).unwrap_or(0);
            if answered != calls {
                return Err(violation(
                    "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
                ));
            }
        }
        if responses > 0 {
            if role(i) != "user" {
                return Err(violation("Please ensure that function response turns come from the user."));
            }
            if i == 0 || has_part(&contents[i - 1], "function_call") == 0 {
                return Err(violation(
                    "Please ensure that function response turn comes immediately after a function call turn.",
                ));
            }
        }
    }
    Ok(())
}

fn check_tools(tools: &Value) -> Result<(), Violation> {
    let Some(tools) = tools.as_array() else {
        return Err(violation("Invalid JSON payload received. Proto field is repeated, expected a list at 'tools'."));
    };
    for (i, tool) in tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        let Some(tool) = tool.as_object() else {
            return Err(violation(format!(
                "Invalid value at '{at}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Tool)"
            )));
        };
        known_fields(
            tool,
            &["function_declarations", "google_search", "google_search_retrieval", "code_execution", "url_context"],
            &at,
        )?;
        let Some(declarations) = field(tool, "function_declarations") else { continue };
        let Some(declarations) = declarations.as_array() else {
            return Err(violation(format!(
                "Invalid JSON payload received. Proto field is repeated, expected a list at '{at}.function_declarations'."
            )));
        };
        for (j, declaration) in declarations.iter().enumerate() {
            let at = format!("{at}.function_declarations[{j}]");
            let Some(declaration) = declaration.as_object() else {
                return Err(violation(format!("Invalid value at '{at}'")));
            };
            known_fields(
                declaration,
                &[
                    "name",
                    "description",
                    "parameters",
                    "parameters_json_schema",
                    "response",
                    "response_json_schema",
                    "behavior",
                ],
                &at,
            )?;
            let name = field(declaration, "name").and_then(Value::as_str).unwrap_or("");
            if !is_function_name(name) {
                return Err(violation(format!(
                    "* GenerateContentRequest.{at}.name: Invalid function name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots and dashes, with a maximum length of 64.\n"
                )));
            }
            let parameters = field(declaration, "parameters");
            if parameters.is_some() && field(declaration, "parameters_json_schema").is_some() {
                return Err(violation(format!(
                    "* GenerateContentRequest.{at}: parameters and parameters_json_schema are mutually exclusive.\n"
                )));
            }
            if let Some(parameters) = parameters {
                check_schema(parameters, &join(&at, "parameters"))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;

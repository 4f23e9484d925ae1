//! Small helpers shared by the vendor modules.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use superpi_proto::ContentBlock;

use crate::stream::ProviderError;

/// Parses one event's data as JSON, or names the chunk that is not JSON.
pub(crate) fn json_chunk(provider: &str, data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|err| ProviderError::Protocol {
        provider: provider.to_string(),
        message: format!("a chunk is not JSON ({err}): {}", data.chars().take(200).collect::<String>()),
    })
}

/// An error object inside a stream (`{"error": {...}}`) as a provider error.
pub(crate) fn stream_error(provider: &str, error: &Value) -> ProviderError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| error.as_str().map(str::to_string))
        .unwrap_or_else(|| error.to_string());
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .filter(|code| (100..600).contains(code))
        .map(|code| code as u16)
        .unwrap_or(500);
    ProviderError::Http { provider: provider.to_string(), status, message }
}

/// The provider's own words from an error body (`error.message`, `message`, or the body).
pub fn error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        // Gemini's streaming endpoint answers an array of one error.
        let value = value.get(0).cloned().unwrap_or(value);
        let candidates =
            [value.pointer("/error/message"), value.get("message"), value.get("error"), value.get("detail")];
        for candidate in candidates.into_iter().flatten() {
            if let Some(text) = candidate.as_str() {
                return text.to_string();
            }
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty body)".to_string();
    }
    trimmed.chars().take(500).collect()
}

/// The text blocks of a message, joined.
pub(crate) fn joined_text(blocks: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in blocks {
        if let ContentBlock::Text { text } = block {
            if !out.is_empty() && !text.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    out
}

/// Arguments as an object (the vendors want one): anything else is wrapped.
pub(crate) fn arguments_object(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        Value::Null => Value::Object(Default::default()),
        other => serde_json::json!({ "arguments": other }),
    }
}

pub(crate) fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// A tool-call id for an API that gave none: unique within the process and, by its time
/// prefix, across runs, so that ids never repeat within a conversation.
pub(crate) fn fresh_call_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let millis = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_{millis:x}{n:x}")
}

/// A name as OpenAI and Anthropic take it (`^[a-zA-Z0-9_-]{1,64}$`): other characters become
/// `_`, a longer name is cut.
pub(crate) fn plain_name(name: &str) -> std::borrow::Cow<'_, str> {
    let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    if !name.is_empty() && name.len() <= 64 && name.bytes().all(valid) {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut cleaned: String =
        name.chars().map(|c| if c.is_ascii() && valid(c as u8) { c } else { '_' }).take(64).collect();
    if cleaned.is_empty() {
        cleaned.push_str("tool");
    }
    std::borrow::Cow::Owned(cleaned)
}

/// FNV-1a of a string: a stable short hash for rewritten ids.
pub(crate) fn short_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// A tool's input schema as OpenAI and Anthropic require it: an object schema (a schema that
/// is not one, or a boolean schema, becomes an object that takes anything).
pub(crate) fn object_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) if map.get("type").and_then(Value::as_str) == Some("object") => schema.clone(),
        Value::Object(map) if !map.contains_key("type") => {
            let mut map = map.clone();
            map.insert("type".into(), Value::from("object"));
            Value::Object(map)
        }
        _ => serde_json::json!({"type": "object"}),
    }
}

/// Whether a schema meets OpenAI's strict structured-output rules, so it may be sent with
/// `strict: true` (the decoder then keeps to it): an object at the root, and every object
/// closed (`additionalProperties: false`) with every property required. Another schema is sent
/// with `strict: false`; the answer is checked by the caller either way.
pub(crate) fn strict_schema(schema: &Value) -> bool {
    let root_object = schema.get("type").and_then(Value::as_str) == Some("object");
    root_object && closed_everywhere(schema)
}

fn closed_everywhere(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else { return true };
    let is_object = map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
    if is_object {
        let properties = map.get("properties").and_then(Value::as_object);
        let required: Vec<&str> =
            map.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let all_required = properties.is_none_or(|p| p.keys().all(|key| required.contains(&key.as_str())));
        if map.get("additionalProperties") != Some(&Value::Bool(false)) || !all_required {
            return false;
        }
    }
    let nested = ["properties", "$defs", "definitions"]
        .iter()
        .filter_map(|key| map.get(*key).and_then(Value::as_object))
        .flat_map(|children| children.values());
    let listed = ["anyOf", "allOf", "oneOf"].iter().filter_map(|key| map.get(*key).and_then(Value::as_array)).flatten();
    let items = map.get("items").into_iter();
    nested.chain(listed).chain(items).all(closed_everywhere)
}

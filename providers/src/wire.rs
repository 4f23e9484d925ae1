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

//! The vendors' documented request rules, as pure checks over a request body. The fakes run
//! them on every request and answer a broken rule the way the real API does; the property
//! tests run the request builders' output through them.
//!
//! Each check returns the first broken rule as a [`Violation`] carrying the vendor's status and
//! its own wording of the error; [`Violation::body`] is the vendor's error body.

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub mod responses;
pub mod tool_search;

use serde_json::{Value, json};

/// Which vendor's rules and formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// Chat Completions.
    Openai,
    /// OpenAI's Responses API (Codex's).
    OpenaiResponses,
    Anthropic,
    Gemini,
}

impl Vendor {
    pub fn as_str(self) -> &'static str {
        match self {
            Vendor::Openai => "openai",
            Vendor::OpenaiResponses => "openai-responses",
            Vendor::Anthropic => "anthropic",
            Vendor::Gemini => "gemini",
        }
    }
}

/// A broken rule, as the vendor reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub vendor: Vendor,
    pub status: u16,
    pub message: String,
    /// OpenAI's `param` (the offending field), when it names one.
    pub param: Option<String>,
    /// OpenAI's `code` (`invalid_encrypted_content`...), when the error has one.
    pub code: Option<String>,
}

impl Violation {
    pub(crate) fn new(vendor: Vendor, message: impl Into<String>) -> Self {
        Violation { vendor, status: 400, message: message.into(), param: None, code: None }
    }

    pub(crate) fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    pub(crate) fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    pub(crate) fn code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// The vendor's error body for this violation.
    pub fn body(&self) -> Value {
        match self.vendor {
            Vendor::Openai | Vendor::OpenaiResponses => json!({"error": {
                "message": self.message,
                "type": "invalid_request_error",
                "param": self.param,
                "code": match (&self.code, self.status) {
                    (Some(code), _) => Value::from(code.as_str()),
                    (None, 401) => Value::from("invalid_api_key"),
                    (None, _) => Value::Null,
                },
            }}),
            Vendor::Anthropic => {
                let kind = match self.status {
                    401 => "authentication_error",
                    403 => "permission_error",
                    404 => "not_found_error",
                    _ => "invalid_request_error",
                };
                json!({"type": "error", "error": {"type": kind, "message": self.message}, "request_id": "req_fake"})
            }
            Vendor::Gemini => {
                let status = match self.status {
                    403 => "PERMISSION_DENIED",
                    404 => "NOT_FOUND",
                    401 => "UNAUTHENTICATED",
                    _ => "INVALID_ARGUMENT",
                };
                json!({"error": {"code": self.status, "message": self.message, "status": status}})
            }
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} HTTP {}: {}", self.vendor.as_str(), self.status, self.message)
    }
}

/// `^[a-zA-Z0-9_-]{1,max}$`.
pub(crate) fn is_plain_name(name: &str, max: usize) -> bool {
    !name.is_empty() && name.len() <= max && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The JSON type name the vendors' validators print.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An OpenAI `json_schema` format (Chat Completions' `response_format.json_schema`, the
/// Responses API's `text.format`; `at` is its parameter path): a name of
/// `^[a-zA-Z0-9_-]{1,64}$`, an object schema, and with `strict: true` the strict rules, every
/// object closed (`additionalProperties: false`) with every property in `required`.
pub(crate) fn check_json_schema_format(vendor: Vendor, format: &Value, at: &str) -> Result<(), Violation> {
    let name = match format.get("name") {
        Some(Value::String(name)) => name.as_str(),
        _ => {
            return Err(
                Violation::new(vendor, format!("Missing required parameter: '{at}.name'.")).param(format!("{at}.name"))
            );
        }
    };
    if !is_plain_name(name, 64) {
        return Err(Violation::new(vendor, format!(
            "Invalid '{at}.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        ))
        .param(format!("{at}.name")));
    }
    let schema = format.get("schema").unwrap_or(&Value::Null);
    let invalid = |why: String| {
        Violation::new(vendor, format!("Invalid schema for response_format '{name}': {why}"))
            .param(format!("{at}.schema"))
    };
    let kind = schema.get("type").and_then(Value::as_str);
    if kind != Some("object") {
        return Err(invalid(format!(
            "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{}\"'.",
            kind.unwrap_or("None")
        )));
    }
    if format.get("strict") == Some(&Value::Bool(true)) {
        strict_rules(schema, &mut Vec::new()).map_err(invalid)?;
    }
    Ok(())
}

/// The strict rules over one schema node and what it nests; `path` is the context OpenAI names.
fn strict_rules(schema: &Value, path: &mut Vec<String>) -> Result<(), String> {
    let Some(map) = schema.as_object() else { return Ok(()) };
    let context = || format!("In context=({})", path.iter().map(|p| format!("'{p}'")).collect::<Vec<_>>().join(", "));
    if map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties") {
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Err(format!("{}, 'additionalProperties' is required to be supplied and to be false.", context()));
        }
        let required: Vec<&str> =
            map.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let keys = map.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.keys());
        if let Some(missing) = keys.into_iter().find(|key| !required.contains(&key.as_str())) {
            return Err(format!(
                "{}, 'required' is required to be supplied and to be an array including every key in properties. Missing '{missing}'.",
                context()
            ));
        }
    }
    for key in ["properties", "$defs", "definitions"] {
        for (child, nested) in map.get(key).and_then(Value::as_object).into_iter().flatten() {
            path.extend([key.to_string(), child.clone()]);
            strict_rules(nested, path)?;
            path.truncate(path.len() - 2);
        }
    }
    for key in ["anyOf", "allOf", "oneOf"] {
        for (i, nested) in map.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            path.extend([key.to_string(), i.to_string()]);
            strict_rules(nested, path)?;
            path.truncate(path.len() - 2);
        }
    }
    if let Some(items) = map.get("items") {
        path.push("items".into());
        strict_rules(items, path)?;
        path.pop();
    }
    Ok(())
}

//! Gemini's `Schema` message: the OpenAPI 3.0 subset that `FunctionDeclaration.parameters`
//! takes. Anything else (`exclusiveMinimum`, `additionalProperties`, `$ref`, `const`, `oneOf`,
//! a type list, a boolean schema, a number enum, an unsupported format) is refused.

use serde_json::Value;

use super::Violation;
use super::{field, known_fields, violation};

/// The fields of `Schema`, by proto name.
pub const SCHEMA_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "max_items",
    "min_items",
    "properties",
    "required",
    "min_properties",
    "max_properties",
    "min_length",
    "max_length",
    "pattern",
    "example",
    "any_of",
    "property_ordering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// The values of the `Type` enum.
pub const TYPES: &[&str] = &["TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"];

/// The formats each type supports.
pub fn supported_formats(kind: &str) -> &'static [&'static str] {
    match kind {
        "STRING" => &["enum", "date-time"],
        "NUMBER" => &["float", "double"],
        "INTEGER" => &["int32", "int64"],
        _ => &[],
    }
}

fn invalid_value(at: &str, type_url: &str, value: &Value) -> Violation {
    violation(format!("Invalid value at '{at}' ({type_url}), {value}"))
}

const SCHEMA_URL: &str = "type.googleapis.com/google.ai.generativelanguage.v1beta.Schema";

/// Checks one schema at `at` (a proto field path such as `tools[0].function_declarations[1].parameters`).
pub fn check_schema(schema: &Value, at: &str) -> Result<(), Violation> {
    let Some(object) = schema.as_object() else {
        if schema.is_array() {
            return Err(violation(format!(
                "Invalid JSON payload received. Proto field is not repeating, cannot start list at '{at}'."
            )));
        }
        return Err(invalid_value(at, SCHEMA_URL, schema));
    };
    known_fields(object, SCHEMA_FIELDS, at)?;
    let kind = match field(object, "type") {
        None => None,
        Some(Value::String(kind)) => {
            let upper = kind.to_ascii_uppercase();
            if !TYPES.contains(&upper.as_str()) {
                return Err(violation(format!(
                    "Invalid value at '{at}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), \"{kind}\""
                )));
            }
            Some(upper)
        }
        Some(Value::Array(_)) => {
            return Err(violation(format!(
                "Invalid JSON payload received. Proto field is not repeating, cannot start list at '{at}.type'."
            )));
        }
        Some(other) => {
            return Err(invalid_value(
                &format!("{at}.type"),
                "type.googleapis.com/google.ai.generativelanguage.v1beta.Type",
                other,
            ));
        }
    };
    for (name, expect) in [("title", "string"), ("description", "string"), ("pattern", "string"), ("format", "string")]
    {
        if let Some(value) = field(object, name).filter(|v| !v.is_string()) {
            return Err(invalid_value(
                &format!("{at}.{name}"),
                &format!("TYPE_{}", expect.to_ascii_uppercase()),
                value,
            ));
        }
    }
    if let Some(value) = field(object, "nullable").filter(|v| !v.is_boolean()) {
        return Err(invalid_value(&format!("{at}.nullable"), "TYPE_BOOL", value));
    }
    for name in ["max_items", "min_items", "min_properties", "max_properties", "min_length", "max_length"] {
        if let Some(value) = field(object, name).filter(|v| !is_int64(v)) {
            return Err(invalid_value(&format!("{at}.{name}"), "TYPE_INT64", value));
        }
    }
    for name in ["minimum", "maximum"] {
        if let Some(value) = field(object, name).filter(|v| !v.is_number()) {
            return Err(invalid_value(&format!("{at}.{name}"), "TYPE_DOUBLE", value));
        }
    }
    if let Some(format) = field(object, "format").and_then(Value::as_str) {
        let kind = kind.as_deref().unwrap_or("TYPE_UNSPECIFIED");
        let supported = supported_formats(kind);
        if !supported.contains(&format) {
            let message = match kind {
                "STRING" => "only 'enum' and 'date-time' are supported for STRING type".to_string(),
                "NUMBER" => "only 'float' and 'double' are supported for NUMBER type".to_string(),
                "INTEGER" => "only 'int32' and 'int64' are supported for INTEGER type".to_string(),
                other => format!("format is not supported for {other} type"),
            };
            return Err(violation(format!("* GenerateContentRequest.{at}.format: {message}\n")));
        }
    }
    for name in ["enum", "required", "property_ordering"] {
        let Some(value) = field(object, name) else { continue };
        let Some(items) = value.as_array() else {
            return Err(violation(format!(
                "Invalid JSON payload received. Proto field is repeated, expected a list at '{at}.{name}'."
            )));
        };
        if let Some((k, item)) = items.iter().enumerate().find(|(_, item)| !item.is_string()) {
            return Err(invalid_value(&format!("{at}.{name}[{k}]"), "TYPE_STRING", item));
        }
    }
    let properties = match field(object, "properties") {
        None => None,
        Some(Value::Object(properties)) => Some(properties),
        Some(other) => return Err(invalid_value(&format!("{at}.properties"), SCHEMA_URL, other)),
    };
    if let Some(required) = field(object, "required").and_then(Value::as_array) {
        for (k, name) in required.iter().enumerate() {
            let defined = name.as_str().is_some_and(|n| properties.is_some_and(|p| p.contains_key(n)));
            if !defined {
                return Err(violation(format!(
                    "* GenerateContentRequest.{at}.required[{k}]: property is not defined\n"
                )));
            }
        }
    }
    for (name, property) in properties.into_iter().flatten() {
        check_schema(property, &format!("{at}.properties[{name}].value"))?;
    }
    if let Some(items) = field(object, "items") {
        check_schema(items, &format!("{at}.items"))?;
    }
    if let Some(any_of) = field(object, "any_of") {
        let Some(variants) = any_of.as_array() else {
            return Err(violation(format!(
                "Invalid JSON payload received. Proto field is repeated, expected a list at '{at}.any_of'."
            )));
        };
        for (k, variant) in variants.iter().enumerate() {
            check_schema(variant, &format!("{at}.any_of[{k}]"))?;
        }
    }
    if kind.as_deref() == Some("ARRAY") && field(object, "items").is_none() {
        return Err(violation(format!("* GenerateContentRequest.{at}.items: missing field.\n")));
    }
    if kind.as_deref() == Some("OBJECT") && properties.is_none_or(|p| p.is_empty()) {
        return Err(violation(format!(
            "* GenerateContentRequest.{at}.properties: should be non-empty for OBJECT type\n"
        )));
    }
    Ok(())
}

fn is_int64(value: &Value) -> bool {
    value.as_i64().is_some() || value.as_str().is_some_and(|s| s.parse::<i64>().is_ok())
}

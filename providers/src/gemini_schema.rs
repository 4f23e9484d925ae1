//! JSON Schema to Gemini's `Schema`, the OpenAPI 3.0 subset `FunctionDeclaration.parameters`
//! takes. Tool schemas come from anywhere (MCP servers publish whatever their libraries emit),
//! so this accepts any JSON and always returns a schema of the subset:
//!
//! - `$ref` is inlined from `$defs` / `definitions` (a recursive one stops after a few levels
//!   as an object that takes anything); `allOf` is merged;
//! - `oneOf` / `anyOf` become `anyOf`, a `null` variant becomes `nullable`, one variant left is
//!   the schema itself; a type list (`["integer", "null"]`) becomes `type` + `nullable` or `anyOf`;
//! - `const` becomes a one-value `enum`; enums of non-strings move to the description;
//! - `exclusiveMinimum` / `exclusiveMaximum` (numbers) become `minimum` / `maximum`;
//! - a format the type lacks moves to the description; `examples` gives `example`;
//! - boolean schemas: `true` takes anything, a `false` property is dropped;
//! - every other keyword (`additionalProperties`, `patternProperties`, `$schema`, `not`, ...)
//!   is dropped; `required` keeps only defined properties; an array gets `items`.

use serde_json::{Map, Value, json};

/// How deep `$ref`s are followed inside themselves, and how deep any schema is read.
const MAX_REF_DEPTH: usize = 3;
const MAX_DEPTH: usize = 48;

struct Translator<'a> {
    root: &'a Value,
    /// `$ref`s being expanded, innermost last.
    expanding: Vec<String>,
}

/// The `parameters` of a function declaration for `schema`, or `None` when the function takes
/// no arguments (the field is then left unset, as Gemini documents).
pub fn parameters(schema: &Value) -> Option<Value> {
    let mut translator = Translator { root: schema, expanding: Vec::new() };
    let mut out = translator.schema(schema, 0);
    let object = out.as_object_mut()?;
    let has_properties = object.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    if !has_properties {
        return None;
    }
    object.insert("type".into(), json!("object"));
    Some(out)
}

fn append_description(out: &mut Map<String, Value>, note: &str) {
    let text = match out.get("description").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing} ({note})"),
        _ => format!("({note})"),
    };
    out.insert("description".into(), Value::String(text));
}

fn gemini_formats(kind: &str) -> &'static [&'static str] {
    match kind {
        "string" => &["enum", "date-time"],
        "number" => &["float", "double"],
        "integer" => &["int32", "int64"],
        _ => &[],
    }
}

/// The JSON-Schema types Gemini's `Type` knows (`null` is `nullable`).
fn is_schema_type(name: &str) -> bool {
    matches!(name, "string" | "number" | "integer" | "boolean" | "array" | "object")
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl Translator<'_> {
    fn resolve(&self, reference: &str) -> Option<Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer).cloned()
    }

    /// Inlines `$ref` and merges `allOf` into one JSON Schema object (still JSON Schema).
    fn flatten(&mut self, schema: &Value, depth: usize) -> Map<String, Value> {
        let Some(object) = schema.as_object() else { return Map::new() };
        let mut merged = object.clone();
        if let Some(reference) = merged.remove("$ref").and_then(|r| r.as_str().map(str::to_string)) {
            let nesting = self.expanding.iter().filter(|r| **r == reference).count();
            match self.resolve(&reference) {
                Some(target) if nesting < MAX_REF_DEPTH && depth < MAX_DEPTH => {
                    // Stays on the stack while the inlined schema's children are translated:
                    // `schema` pops what its `flatten` pushed.
                    self.expanding.push(reference);
                    let inlined = self.flatten(&target, depth + 1);
                    for (key, value) in inlined {
                        merged.entry(key).or_insert(value);
                    }
                }
                _ => {
                    merged.entry("type").or_insert(json!("object"));
                    let mut note = Map::new();
                    append_description(&mut note, "nested value of the same shape");
                    merged.entry("description").or_insert(note["description"].clone());
                }
            }
        }
        if let Some(Value::Array(parts)) = merged.remove("allOf") {
            for part in parts {
                let part = self.flatten(&part, depth + 1);
                for (key, value) in part {
                    match (key.as_str(), merged.get_mut(&key), value) {
                        ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                            for (name, schema) in theirs {
                                mine.entry(name).or_insert(schema);
                            }
                        }
                        ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                            mine.extend(theirs.into_iter().filter(|n| !mine.contains(n)).collect::<Vec<_>>());
                        }
                        (_, None, value) => {
                            merged.insert(key, value);
                        }
                        _ => {}
                    }
                }
            }
        }
        merged
    }

    fn schema(&mut self, schema: &Value, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return json!({});
        }
        if !schema.is_object() {
            // `true` (and anything that is not a schema) takes anything.
            return json!({});
        }
        let entered = self.expanding.len();
        let source = self.flatten(schema, depth);
        let out = self.translate(&source, depth);
        self.expanding.truncate(entered);
        out
    }

    /// One flattened JSON Schema object to a Gemini schema.
    fn translate(&mut self, source: &Map<String, Value>, depth: usize) -> Value {
        let mut out = Map::new();
        for key in ["title", "description"] {
            if let Some(Value::String(text)) = source.get(key) {
                out.insert(key.into(), Value::String(text.clone()));
            }
        }
        let mut nullable = source.get("nullable").and_then(Value::as_bool).unwrap_or(false);
        let mut kind: Option<String> = None;
        // A `type` that names no JSON-Schema type (Gemini refuses the request for it) is dropped.
        match source.get("type") {
            Some(Value::String(t)) => kind = Some(t.to_ascii_lowercase()).filter(|t| is_schema_type(t)),
            Some(Value::Array(types)) => {
                let mut named: Vec<String> = types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_ascii_lowercase)
                    .filter(|t| is_schema_type(t) || t == "null")
                    .collect();
                if named.iter().any(|t| t == "null") {
                    nullable = true;
                    named.retain(|t| t != "null");
                }
                match named.len() {
                    0 => {}
                    1 => kind = named.pop(),
                    _ => {
                        let variants: Vec<Value> = named.iter().map(|t| json!({"type": t})).collect();
                        out.insert("anyOf".into(), Value::Array(variants));
                    }
                }
            }
            _ => {}
        }
        // Variants: oneOf and anyOf alike.
        let mut variants: Vec<Value> = Vec::new();
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(list)) = source.get(key) {
                for variant in list {
                    let is_null = variant.get("type").and_then(Value::as_str) == Some("null")
                        || variant.get("const").is_some_and(Value::is_null);
                    if is_null {
                        nullable = true;
                    } else if variant != &Value::Bool(false) {
                        variants.push(self.schema(variant, depth + 1));
                    }
                }
            }
        }
        // `const` and `enum`: Gemini takes string enums only.
        let mut values: Vec<Value> = match (source.get("const"), source.get("enum")) {
            (Some(value), _) => vec![value.clone()],
            (None, Some(Value::Array(values))) => values.clone(),
            _ => Vec::new(),
        };
        if values.iter().any(Value::is_null) {
            nullable = true;
            values.retain(|v| !v.is_null());
        }
        if !values.is_empty() {
            if values.iter().all(Value::is_string) && kind.as_deref().is_none_or(|k| k == "string") {
                kind = Some("string".into());
                out.insert("enum".into(), Value::Array(values));
            } else {
                if kind.is_none() && values.iter().all(|v| type_of(v) == type_of(&values[0])) {
                    kind = Some(type_of(&values[0]).into());
                }
                let listed: Vec<String> = values.iter().take(50).map(Value::to_string).collect();
                append_description(&mut out, &format!("one of: {}", listed.join(", ")));
            }
        }
        if kind.is_none() {
            if source.contains_key("properties") {
                kind = Some("object".into());
            } else if source.contains_key("items") || source.contains_key("prefixItems") {
                kind = Some("array".into());
            }
        }
        if let Some(format) = source.get("format").and_then(Value::as_str) {
            if gemini_formats(kind.as_deref().unwrap_or("")).contains(&format) {
                out.insert("format".into(), json!(format));
            } else {
                append_description(&mut out, &format!("format: {format}"));
            }
        }
        for key in ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"] {
            if let Some(n) = source.get(key).and_then(Value::as_u64) {
                out.insert(key.into(), json!(n));
            }
        }
        for (key, exclusive) in [("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")] {
            let bound =
                source.get(key).filter(|v| v.is_number()).or_else(|| source.get(exclusive).filter(|v| v.is_number()));
            if let Some(bound) = bound {
                out.insert(key.into(), bound.clone());
            }
        }
        if let Some(Value::String(pattern)) = source.get("pattern") {
            out.insert("pattern".into(), json!(pattern));
        }
        if let Some(default) = source.get("default") {
            out.insert("default".into(), default.clone());
        }
        if let Some(example) = source.get("example").or_else(|| source.get("examples").and_then(|e| e.get(0))) {
            out.insert("example".into(), example.clone());
        }
        if let Some(Value::Object(properties)) = source.get("properties") {
            let mut translated = Map::new();
            for (name, property) in properties {
                if property == &Value::Bool(false) {
                    continue;
                }
                translated.insert(name.clone(), self.schema(property, depth + 1));
            }
            if let Some(Value::Array(required)) = source.get("required") {
                let required: Vec<Value> = required
                    .iter()
                    .filter(|name| name.as_str().is_some_and(|n| translated.contains_key(n)))
                    .cloned()
                    .collect();
                if !required.is_empty() {
                    out.insert("required".into(), Value::Array(required));
                }
            }
            out.insert("properties".into(), Value::Object(translated));
        }
        if kind.as_deref() == Some("array") {
            let items = match (source.get("items"), source.get("prefixItems")) {
                (Some(items @ Value::Object(_)), _) => self.schema(items, depth + 1),
                (Some(Value::Array(tuple)), _) | (None, Some(Value::Array(tuple))) if !tuple.is_empty() => {
                    let variants: Vec<Value> = tuple.iter().map(|item| self.schema(item, depth + 1)).collect();
                    one_or_any(variants)
                }
                _ => json!({"type": "string"}),
            };
            out.insert("items".into(), items);
        }
        // Gemini refuses an OBJECT without properties ("should be non-empty for OBJECT type"):
        // a free-form object (a JSON Schema, headers by name) is left untyped, which takes any.
        let empty = out.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty());
        if kind.as_deref() == Some("object") && empty {
            kind = None;
            out.remove("properties");
            append_description(&mut out, "a JSON object");
        }
        if let Some(kind) = kind {
            out.insert("type".into(), Value::String(kind));
        }
        if !variants.is_empty() && !out.contains_key("anyOf") {
            if out.contains_key("type") || variants.len() == 1 {
                // A typed schema with variants, or one variant: merge what the variants add.
                for variant in variants {
                    if let Value::Object(variant) = variant {
                        for (key, value) in variant {
                            out.entry(key).or_insert(value);
                        }
                    }
                }
            } else {
                out.insert("anyOf".into(), Value::Array(variants));
            }
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        Value::Object(out)
    }
}

fn one_or_any(mut variants: Vec<Value>) -> Value {
    if variants.len() == 1 {
        return variants.remove(0);
    }
    json!({"anyOf": variants})
}

#[cfg(test)]
#[path = "gemini_schema_tests.rs"]
mod tests;

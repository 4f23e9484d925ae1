#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::json;

use super::*;

#[test]
fn the_bash_schema_loses_what_gemini_refuses() {
    let bash = json!({"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {
        "command": {"type": "string", "description": "The command"},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds"}},
        "required": ["command"], "additionalProperties": false});
    assert_eq!(
        parameters(&bash).unwrap(),
        json!({"type": "object", "properties": {
            "command": {"type": "string", "description": "The command"},
            "timeout": {"type": "number", "minimum": 0, "description": "Seconds"}},
            "required": ["command"]})
    );
}

#[test]
fn refs_unions_consts_and_type_lists() {
    let schema = json!({"type": "object", "$defs": {"mode": {"type": "string", "enum": ["a", "b"]}},
        "properties": {
            "mode": {"$ref": "#/$defs/mode"},
            "limit": {"type": ["integer", "null"]},
            "kind": {"const": "fixed"},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "maybe": {"anyOf": [{"type": "string", "format": "uri"}, {"type": "null"}]},
            "levels": {"type": "integer", "enum": [1, 2, 3]},
            "never": false,
            "anything": true},
        "required": ["mode", "never", "ghost"]});
    assert_eq!(
        parameters(&schema).unwrap(),
        json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "limit": {"type": "integer", "nullable": true},
            "kind": {"type": "string", "enum": ["fixed"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "maybe": {"type": "string", "description": "(format: uri)", "nullable": true},
            "levels": {"type": "integer", "description": "(one of: 1, 2, 3)"},
            "anything": {}},
            "required": ["mode"]})
    );
}

#[test]
fn recursive_refs_stop_and_no_arguments_means_no_parameters() {
    let tree = json!({"type": "object", "properties": {"node": {"$ref": "#/definitions/node"}},
        "definitions": {"node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/node"}}}}}});
    let out = parameters(&tree).unwrap().to_string();
    assert!(out.contains("nested value of the same shape"), "{out}");
    assert_eq!(parameters(&json!({"type": "object", "properties": {}})), None);
    assert_eq!(parameters(&json!({"type": "object"})), None);
    assert_eq!(parameters(&json!(true)), None);
}

#[test]
fn a_type_that_names_no_json_schema_type_is_dropped() {
    // Found by the schema_gemini fuzz target: Gemini refuses an unknown `Type`.
    let schema = json!({"type": "object", "properties": {"limit": {"type": "integ: ", "minimum": 1}, "n": {"type": ["nope", "null"]}}});
    let out = parameters(&schema).unwrap();
    assert_eq!(out["properties"]["limit"].get("type"), None, "{out}");
    assert_eq!(out["properties"]["n"].get("type"), None, "{out}");
    assert_eq!(out["properties"]["n"]["nullable"], true, "{out}");
}

/// A free-form object inside the parameters (ask_question's per-answer JSON Schema, an MCP
/// tool's headers map): Gemini refuses an OBJECT without properties, so it goes untyped.
#[test]
fn an_object_without_properties_is_left_untyped() {
    let schema = json!({"type": "object", "properties": {
        "question": {"type": "string"},
        "schema": {"type": "object", "description": "The JSON Schema of a free answer"}}});
    assert_eq!(
        parameters(&schema).unwrap(),
        json!({"type": "object", "properties": {
            "question": {"type": "string"},
            "schema": {"description": "The JSON Schema of a free answer (a JSON object)"}}})
    );
}

#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::json;

use super::*;

fn with_tool(parameters: serde_json::Value) -> serde_json::Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
           "tools": [{"functionDeclarations": [{"name": "ls", "description": "d"}, {"name": "bash", "parameters": parameters}]}]})
}

#[test]
fn unknown_schema_keywords_are_refused_with_the_apis_words() {
    let bash = json!({"type": "object", "properties": {
        "command": {"type": "string"}, "timeout": {"type": "number", "exclusiveMinimum": 0}}});
    let err = check(&with_tool(bash)).unwrap_err();
    assert_eq!(
        err.message,
        "Invalid JSON payload received. Unknown name \"exclusiveMinimum\" at 'tools[0].function_declarations[1].parameters.properties[timeout].value': Cannot find field."
    );
    assert_eq!(err.body()["error"]["status"], "INVALID_ARGUMENT");
    for bad in [
        json!({"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}),
        json!({"type": "object", "$schema": "x"}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}}),
        json!({"type": "object", "properties": {"a": {"const": "x"}}}),
        json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}),
        json!({"type": "object", "properties": {"a": {"type": ["integer", "null"]}}}),
        json!({"type": "object", "properties": {"a": true}}),
        json!({"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}}),
        json!({"type": "object", "properties": {"a": {"type": "array"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}),
        // A free-form object inside: "should be non-empty for OBJECT type".
        json!({"type": "object", "properties": {"a": {"type": "object"}}}),
    ] {
        assert!(check(&with_tool(bad.clone())).is_err(), "{bad}");
    }
    let good = json!({"type": "OBJECT", "properties": {"a": {"type": "string", "nullable": true, "format": "date-time"},
        "b": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 1}]}}}, "required": ["a"]});
    assert_eq!(check(&with_tool(good)), Ok(()));
}

#[test]
fn function_calls_need_their_responses_in_the_next_turn() {
    let call = json!({"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]});
    let response =
        json!({"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "x"}}}]});
    let user = json!({"role": "user", "parts": [{"text": "hi"}]});
    assert_eq!(check(&json!({"contents": [user, call, response]})), Ok(()));
    let err = check(&json!({"contents": [user, call, user]})).unwrap_err();
    assert!(err.message.contains("number of function response parts"), "{err}");
    let err = check(&json!({"contents": [user, response]})).unwrap_err();
    assert!(err.message.contains("function response turn comes immediately after a function call turn"), "{err}");
    let err = check(&json!({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]})).unwrap_err();
    assert!(err.message.contains("valid role"), "{err}");
    let err = check(&json!({"contents": [{"role": "user", "parts": []}]})).unwrap_err();
    assert!(err.message.contains("must not be empty"), "{err}");
    let err = check(&json!({"contents": [{"role": "user", "parts": [{"text": ""}]}]})).unwrap_err();
    assert!(err.message.contains("empty text"), "{err}");
    assert!(check(&json!({"contents": [user], "generationConfig": {"maxTokens": 3}})).is_err());
}

#[test]
fn names_and_keys() {
    assert!(is_function_name("mcp_server.tool-1"));
    assert!(!is_function_name("1tool"));
    assert!(!is_function_name(&"a".repeat(65)));
    assert_eq!(check_key(|_| None, "alt=sse").unwrap_err().status, 403);
    assert_eq!(check_key(|_| None, "alt=sse&key=k"), Ok(()));
}

#[test]
fn gemini_3_wants_the_signature_of_calls_in_the_turn_in_progress() {
    let user = json!({"role": "user", "parts": [{"text": "hi"}]});
    let call = json!({"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]});
    let response =
        json!({"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "x"}}}]});
    let body = json!({"contents": [user, call, response]});
    assert_eq!(check_for("gemini-2.5-flash", &body), Ok(()));
    let err = check_for("gemini-3-pro-preview", &body).unwrap_err();
    assert!(err.message.starts_with("Function call is missing a thought_signature"), "{err}");
    let mut signed = body.clone();
    signed["contents"][1]["parts"][0]["thoughtSignature"] = json!("sig");
    assert_eq!(check_for("gemini-3-pro-preview", &signed), Ok(()));
    // A finished turn (a user text after it) is not checked.
    let mut later = body.clone();
    later["contents"].as_array_mut().unwrap().extend([json!({"role": "model", "parts": [{"text": "done"}]}), user]);
    assert_eq!(check_for("gemini-3-pro-preview", &later), Ok(()));
}

#[test]
fn thinking_budgets_within_each_models_range() {
    let body = |budget: i64| {
        json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
               "generationConfig": {"thinkingConfig": {"thinkingBudget": budget}}})
    };
    assert!(check_for("gemini-2.5-pro", &body(0)).unwrap_err().message.contains("only works in thinking mode"));
    assert!(check_for("gemini-2.5-pro", &body(40_000)).unwrap_err().message.contains("between 128 and 32768"));
    assert!(check_for("gemini-2.5-flash-lite", &body(100)).is_err());
    assert_eq!(check_for("gemini-2.5-flash-lite", &body(0)), Ok(()));
    assert_eq!(check_for("gemini-2.5-flash", &body(0)), Ok(()));
    assert_eq!(check_for("gemini-2.5-pro", &body(-1)), Ok(()));
}

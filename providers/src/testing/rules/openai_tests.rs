#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::json;

use super::*;

fn body(messages: serde_json::Value) -> serde_json::Value {
    json!({"model": "gpt-4o", "stream": true, "messages": messages})
}

fn call(id: &str) -> serde_json::Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
}

#[test]
fn a_paired_conversation_passes() {
    let ok = body(json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "hi"},
        call("call_1"),
        {"role": "tool", "tool_call_id": "call_1", "content": "out"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "more"},
    ]));
    assert_eq!(check(&ok), Ok(()));
}

#[test]
fn a_call_without_its_result_is_refused_as_the_api_does() {
    let broken = body(json!([{"role": "user", "content": "hi"}, call("call_1"), {"role": "user", "content": "again"}]));
    let err = check(&broken).unwrap_err();
    assert_eq!(err.status, 400);
    assert!(
        err.message.starts_with("An assistant message with 'tool_calls' must be followed by tool messages"),
        "{err}"
    );
    assert!(err.message.ends_with("call_1"));
    assert_eq!(err.body()["error"]["type"], "invalid_request_error");
    // A call left open at the end is the same hole.
    assert!(check(&body(json!([{"role": "user", "content": "hi"}, call("call_1")]))).is_err());
}

#[test]
fn a_result_without_its_call_is_refused() {
    let orphan =
        body(json!([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "o"}]));
    let err = check(&orphan).unwrap_err();
    assert!(err.message.contains("must be a response to a preceeding message with 'tool_calls'"), "{err}");
}

#[test]
fn required_fields_ids_names_and_reasoning_parameters() {
    assert!(check(&json!({"messages": [{"role": "user", "content": "hi"}]})).unwrap_err().message.contains("model"));
    assert!(check(&body(json!([]))).unwrap_err().message.contains("too short"));
    let long = "c".repeat(41);
    let err = check(&body(json!([{"role": "user", "content": "hi"}, call(&long),
        {"role": "tool", "tool_call_id": long, "content": "o"}])))
    .unwrap_err();
    assert!(err.message.contains("maximum length 40"), "{err}");
    let mut bad_tool = body(json!([{"role": "user", "content": "hi"}]));
    bad_tool["tools"] =
        json!([{"type": "function", "function": {"name": "mcp.server/tool", "parameters": {"type": "object"}}}]);
    assert!(check(&bad_tool).unwrap_err().message.contains("does not match pattern"));
    let mut reasoning = json!({"model": "o3-mini", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
    assert!(check(&reasoning).unwrap_err().message.contains("max_completion_tokens"));
    reasoning.as_object_mut().unwrap().remove("max_tokens");
    reasoning["max_completion_tokens"] = json!(10);
    reasoning["reasoning_effort"] = json!("high");
    assert_eq!(check(&reasoning), Ok(()));
    let user_null = body(json!([{"role": "user", "content": null}]));
    assert!(check(&user_null).is_err());
}

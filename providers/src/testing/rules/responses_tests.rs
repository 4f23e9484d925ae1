#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::json;

use super::*;

fn body(input: serde_json::Value) -> serde_json::Value {
    json!({"model": "gpt-5.1-codex", "stream": true, "store": false, "input": input,
           "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
                     {"type": "web_search"}]})
}

#[test]
fn a_paired_conversation_passes() {
    let ok = body(json!([
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]));
    assert_eq!(check(&ok), Ok(()));
    assert_eq!(check(&json!({"model": "m", "input": "hello"})), Ok(()));
}

#[test]
fn broken_rules_are_refused_as_the_api_words_them() {
    let orphan = body(json!([{"type": "function_call_output", "call_id": "call_9", "output": "x"}]));
    assert_eq!(check(&orphan).unwrap_err().message, "No tool call found for function call output with call_id call_9.");
    let no_model = json!({"input": "hi"});
    assert_eq!(check(&no_model).unwrap_err().param.as_deref(), Some("model"));
    let stored = json!({"model": "m", "input": "hi", "previous_response_id": "resp_1"});
    assert_eq!(check(&stored).unwrap_err().message, "Previous response with id 'resp_1' not found.");
    let bad_part = body(json!([{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]));
    assert_eq!(check(&bad_part).unwrap_err().param.as_deref(), Some("input[0].content[0]"));
    let bad_name = json!({"model": "m", "tools": [{"type": "function", "name": "a b"}]});
    assert_eq!(check(&bad_name).unwrap_err().param.as_deref(), Some("tools[0].name"));
    let chat_tool = json!({"model": "m", "tools": [{"type": "function", "function": {"name": "x"}}]});
    assert!(check(&chat_tool).is_err(), "the Chat Completions tool shape has no top-level name");
    let effort = json!({"model": "m", "reasoning": {"effort": "max"}});
    assert_eq!(check(&effort).unwrap_err().param.as_deref(), Some("effort"));
    let small = json!({"model": "m", "max_output_tokens": 8});
    assert_eq!(check(&small).unwrap_err().param.as_deref(), Some("max_output_tokens"));
}

#[test]
fn an_input_image_needs_an_image_url_or_a_file() {
    let image = |part: serde_json::Value| {
        body(json!([{"role": "user", "content": [{"type": "input_text", "text": "x"}, part]}]))
    };
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let data_url = format!("data:image/png;base64,{png}");
    assert_eq!(check(&image(json!({"type": "input_image", "image_url": data_url, "detail": "auto"}))), Ok(()));
    assert_eq!(check(&image(json!({"type": "input_image", "image_url": "https://example.com/a.png"}))), Ok(()));
    assert_eq!(check(&image(json!({"type": "input_image", "file_id": "file_1"}))), Ok(()));
    let missing = check(&image(json!({"type": "input_image"}))).unwrap_err();
    assert_eq!(missing.param.as_deref(), Some("input[0].content[1].image_url"));
    let text = check(&image(json!({"type": "input_image", "image_url": "data:text/plain;base64,aGk="}))).unwrap_err();
    assert!(text.message.contains("image MIME type"), "{}", text.message);
    let detail = check(&image(json!({"type": "input_image", "image_url": data_url, "detail": "max"}))).unwrap_err();
    assert_eq!(detail.param.as_deref(), Some("input[0].content[1].detail"));
}

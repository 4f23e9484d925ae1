#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::json;

use super::*;

fn body(input: serde_json::Value) -> serde_json::Value {
    json!({"model": "gpt-5.1-codex", "stream": true, "store": false, "input": input,
           "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}, "strict": false},
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

#[test]
fn calls_need_their_outputs_and_reasoning_comes_back_whole() {
    let unanswered = body(json!([
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"},
    ]));
    assert_eq!(check(&unanswered).unwrap_err().message, "No tool output found for function call call_1.");
    let object_arguments = body(json!([
        {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": {}},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
    ]));
    assert_eq!(check(&object_arguments).unwrap_err().param.as_deref(), Some("input[0].arguments"));

    let reasoning = |item: serde_json::Value| {
        body(
            json!([{"role": "user", "content": "hi"}, item, {"role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}]),
        )
    };
    let made = encrypted_reasoning("rs_1");
    assert_eq!(reasoning_item_of(&made).as_deref(), Some("rs_1"));
    assert_eq!(check(&reasoning(json!({"type": "reasoning", "summary": [], "encrypted_content": made}))), Ok(()));
    let forged = check(&reasoning(json!({"type": "reasoning", "summary": [], "encrypted_content": "gAAAAAnot-ours"})));
    let forged = forged.unwrap_err();
    assert_eq!(
        (forged.code.as_deref(), forged.message.as_str()),
        (Some("invalid_encrypted_content"), "The encrypted content gAAA...ours could not be verified.")
    );
    let by_id = check(&reasoning(json!({"type": "reasoning", "id": "rs_1", "summary": []}))).unwrap_err();
    assert_eq!(by_id.status, 404);
    assert!(by_id.message.contains("Items are not persisted when `store` is set to false"), "{}", by_id.message);
    let no_summary = check(&reasoning(json!({"type": "reasoning", "encrypted_content": made}))).unwrap_err();
    assert_eq!(no_summary.param.as_deref(), Some("input[1].summary"));
}

#[test]
fn strict_tools_need_strict_schemas_and_include_takes_known_values() {
    let tool = |tool: serde_json::Value| json!({"model": "m", "input": "hi", "tools": [tool]});
    let open = tool(
        json!({"type": "function", "name": "ls", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}),
    );
    let refused = check(&open).unwrap_err();
    assert_eq!(refused.code.as_deref(), Some("invalid_function_parameters"));
    assert!(refused.message.starts_with("Invalid schema for function 'ls'"), "{}", refused.message);
    let strict = tool(json!({"type": "function", "name": "ls", "strict": true, "parameters": {"type": "object",
        "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}}));
    assert_eq!(check(&strict), Ok(()));
    let unlisted = tool(json!({"type": "function", "name": "ls", "parameters": {"type": "object",
        "properties": {"path": {"type": "string"}}, "additionalProperties": false}}));
    assert!(check(&unlisted).unwrap_err().message.contains("Missing 'path'"));
    let include =
        json!({"model": "m", "input": "hi", "include": ["reasoning.encrypted_content", "reasoning.everything"]});
    assert_eq!(check(&include).unwrap_err().param.as_deref(), Some("include[1]"));
}

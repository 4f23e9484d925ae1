use serde_json::{Value, json};

use crate::testing::rules::{anthropic, responses};

fn weather(deferred: bool) -> Value {
    json!({"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}, "defer_loading": deferred})
}

fn anthropic_body(model: &str, tools: Value, assistant: Value) -> Value {
    json!({"model": model, "max_tokens": 100, "tools": tools, "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"}]},
    ]})
}

fn search_tool() -> Value {
    json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
}

fn found(tool: &str) -> Value {
    json!([
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "weather"}},
        {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content":
            {"type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": tool}]}},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
    ])
}

fn refusal(body: &Value) -> String {
    anthropic::check(body).expect_err("refused").message
}

#[test]
fn anthropic_holds_the_search_to_its_rules() {
    let ok = anthropic_body("claude-sonnet-4-5", json!([search_tool(), weather(true)]), found("get_weather"));
    assert_eq!(anthropic::check(&ok), Ok(()));
    // A client's own search (no server tool): its result's references load the tool.
    let without_search = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": [weather(true)],
        "messages": [{"role": "user", "content": "weather?"}]});
    assert_eq!(anthropic::check(&without_search), Ok(()));
    let finder = json!({"name": "find_tools", "description": "Finds tools", "input_schema": {"type": "object"}});
    let own_search = |reference: &str| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": [finder, weather(true)], "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_0", "name": "find_tools", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content":
                [{"type": "tool_reference", "tool_name": reference}]}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"}]},
        ]})
    };
    assert_eq!(anthropic::check(&own_search("get_weather")), Ok(()));
    assert!(refusal(&own_search("find_tools")).contains("no tool search of this conversation loaded it"));
    assert!(refusal(&own_search("nope")).contains("Tool reference 'nope'"));
    let mut deferred_search = search_tool();
    deferred_search["defer_loading"] = json!(true);
    let body = anthropic_body("claude-sonnet-4-5", json!([deferred_search, weather(false)]), json!("hi"));
    assert!(refusal(&body).contains("cannot have defer_loading"));
    let old = anthropic_body("claude-opus-4-1", json!([search_tool(), weather(true)]), found("get_weather"));
    assert!(refusal(&old).contains("does not support"));
    let unknown = anthropic_body("claude-sonnet-4-5", json!([search_tool(), weather(true)]), found("nope"));
    assert!(refusal(&unknown).contains("Tool reference 'nope'"));
    let mut alone = found("get_weather");
    alone.as_array_mut().unwrap().remove(1);
    let body = anthropic_body("claude-sonnet-4-5", json!([search_tool(), weather(false)]), alone);
    assert!(refusal(&body).contains("without its tool_search_tool_result"));
    // Unless it is the last message: a turn `pause_turn` paused, sent back to go on.
    let mut paused = body.clone();
    paused["messages"].as_array_mut().unwrap().pop();
    paused["messages"][1]["content"].as_array_mut().unwrap().pop();
    assert_eq!(anthropic::check(&paused), Ok(()));
}

#[test]
fn responses_holds_the_search_to_its_rules() {
    let function = json!({"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": false, "defer_loading": true});
    let items = json!([
        {"type": "message", "role": "user", "content": "weather?"},
        {"type": "tool_search_call", "execution": "server", "call_id": null, "status": "completed", "arguments": {}},
        {"type": "tool_search_output", "execution": "server", "call_id": null, "status": "completed", "tools": [function]},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "rain"},
    ]);
    let body = |model: &str, tools: Value, input: Value| json!({"model": model, "store": false, "tools": tools, "input": input});
    let search = json!({"type": "tool_search"});
    assert_eq!(responses::check(&body("gpt-5.4", json!([search, function]), items.clone())), Ok(()));
    let refused = |b: Value| responses::check(&b).expect_err("refused").message;
    assert!(refused(body("gpt-5.4", json!([function]), json!("hi"))).contains("require a 'tool_search'"));
    assert!(refused(body("gpt-5", json!([search, function]), json!("hi"))).contains("does not support"));
    let mut lost = items.as_array().unwrap().clone();
    lost.drain(1..3);
    assert!(refused(body("gpt-5.4", json!([search, function]), json!(lost))).contains("deferred"));
}

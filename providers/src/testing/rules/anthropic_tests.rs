#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::json;

use super::*;

fn body(messages: serde_json::Value) -> serde_json::Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true, "messages": messages})
}

fn user(text: &str) -> serde_json::Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

fn tool_use(id: &str) -> serde_json::Value {
    json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "bash", "input": {}}]})
}

fn result(id: &str) -> serde_json::Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "o"}]})
}

#[test]
fn a_paired_alternating_conversation_passes() {
    let ok = body(json!([user("hi"), tool_use("toolu_1"), result("toolu_1"),
        {"role": "assistant", "content": "done"}, user("more")]));
    assert_eq!(check(&ok), Ok(()));
}

#[test]
fn pairing_alternation_and_first_role() {
    let err = check(&body(json!([user("hi"), tool_use("toolu_1"), user("again")]))).unwrap_err();
    assert!(
        err.message.contains("`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"),
        "{err}"
    );
    assert_eq!(err.body()["error"]["type"], "invalid_request_error");
    let err = check(&body(json!([user("hi"), {"role": "assistant", "content": "a"}, result("toolu_9")]))).unwrap_err();
    assert!(err.message.contains("unexpected `tool_use_id`"), "{err}");
    let err = check(&body(json!([user("a"), user("b")]))).unwrap_err();
    assert!(err.message.contains("roles must alternate"), "{err}");
    let err = check(&body(json!([{"role": "assistant", "content": "a"}, user("b")]))).unwrap_err();
    assert!(err.message.contains("first message must use the \"user\" role"), "{err}");
}

#[test]
fn empty_content_ids_and_required_fields() {
    let err = check(&body(json!([user("")]))).unwrap_err();
    assert!(err.message.contains("text content blocks must be non-empty"), "{err}");
    let err = check(&body(json!([{"role": "user", "content": []}]))).unwrap_err();
    assert!(err.message.contains("non-empty content"), "{err}");
    let err = check(&body(json!([user("hi"), tool_use("call:1"), result("call:1")]))).unwrap_err();
    assert!(err.message.contains("tool_use.id: String should match pattern"), "{err}");
    assert!(check(&json!({"model": "m", "messages": [user("hi")]})).unwrap_err().message.contains("max_tokens"));
    let mut tools = body(json!([user("hi")]));
    tools["tools"] = json!([{"name": "a.b", "input_schema": {"type": "object"}}]);
    assert!(check(&tools).unwrap_err().message.contains("name"));
    let mut thinking = body(json!([user("hi"), tool_use("toolu_1"), result("toolu_1")]));
    thinking["thinking"] = json!({"type": "enabled", "budget_tokens": 2000});
    thinking["max_tokens"] = json!(4000);
    assert!(check(&thinking).unwrap_err().message.contains("must start with a thinking block"));
}

#[test]
fn headers() {
    assert_eq!(check_headers(|_| None).unwrap_err().status, 401);
    let err = check_headers(|n| (n == "x-api-key").then(|| "k".to_string())).unwrap_err();
    assert!(err.message.contains("anthropic-version"));
    assert_eq!(check_headers(|_| Some("v".to_string())), Ok(()));
}

#[test]
fn beta_requests_may_hold_system_turns_but_keep_the_other_rules() {
    let system = json!({"role": "system", "content": [{"type": "text", "text": "# Environment"}]});
    let with_system = body(json!([user("hi"), system, {"role": "assistant", "content": "a"}, user("b")]));
    assert!(check(&with_system).unwrap_err().message.contains("Input should be 'user' or 'assistant'"));
    assert_eq!(check_beta(&with_system), Ok(()));
    let unpaired = body(json!([user("hi"), system, tool_use("toolu_1"), user("b")]));
    assert!(check_beta(&unpaired).unwrap_err().message.contains("without `tool_result` blocks"));
}

#[test]
fn cache_control_goes_on_at_most_four_blocks_never_a_thinking_one() {
    let mark = json!({"type": "ephemeral"});
    let marked = |text: &str, control: serde_json::Value| json!({"role": "user", "content": [{"type": "text", "text": text, "cache_control": control}]});
    let mut four =
        body(json!([marked("a", mark.clone()), {"role": "assistant", "content": "b"}, marked("c", mark.clone())]));
    four["system"] = json!([{"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]);
    four["tools"] = json!([{"name": "ls", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]);
    assert_eq!(check(&four), Ok(()));

    let mut five = four.clone();
    five["cache_control"] = mark.clone();
    assert_eq!(check(&five).unwrap_err().message, "A maximum of 4 blocks with cache_control may be provided. Found 5.");

    let thinking = json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t", "signature": "s", "cache_control": mark},
        {"type": "text", "text": "b"}]});
    let err = check(&body(json!([user("a"), thinking, user("c")]))).unwrap_err();
    assert_eq!(err.message, "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted");

    let err = check(&body(json!([marked("a", json!({"type": "persistent"}))]))).unwrap_err();
    assert!(err.message.ends_with("cache_control.type: Input should be 'ephemeral'"), "{err}");
    let err = check(&body(json!([marked("a", json!({"type": "ephemeral", "ttl": "10m"}))]))).unwrap_err();
    assert!(err.message.ends_with("cache_control.ephemeral.ttl: Input should be '5m' or '1h'"), "{err}");

    // A 1-hour entry never follows a 5-minute one.
    let mut late = four;
    late["system"][0]["cache_control"] = json!({"type": "ephemeral"});
    late["messages"][2]["content"][0]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
    assert!(check(&late).unwrap_err().message.contains("'1h' may not come after"), "{late}");
}

use serde_json::json;

use super::*;

fn text(answer: &Answer) -> &str {
    match answer {
        Answer::Text(t) => t,
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn the_prompt_is_echoed_past_claude_codes_reminders() {
    let body = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>context</system-reminder>"},
        {"type": "text", "text": "hello from acp"},
        {"type": "text", "text": "<system-reminder>more</system-reminder>"}]},
        {"role": "system", "content": [{"type": "text", "text": "# Environment"}]}]});
    assert_eq!(text(&respond(Vendor::Anthropic, &body)), "hello from acp");
}

#[test]
fn a_tool_directive_calls_an_offered_tool_and_its_result_is_answered() {
    let body = json!({"tools": [{"name": "Bash"}], "messages": [
        {"role": "user", "content": "@tool Bash {\"command\": \"ls\"}"}]});
    match respond(Vendor::Anthropic, &body) {
        Answer::ToolCalls { calls, .. } => assert_eq!(calls, vec![("Bash".to_owned(), json!({"command": "ls"}))]),
        other => panic!("{other:?}"),
    }
    let result = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}]});
    assert_eq!(text(&respond(Vendor::Anthropic, &result)), "the tool ran");
}

#[test]
fn a_tool_the_request_does_not_offer_is_named_in_the_answer() {
    let body = json!({"tools": [{"type": "function", "name": "exec_command"}], "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "@tool Bash {}"}]}]});
    let answer = respond(Vendor::OpenaiResponses, &body);
    assert!(text(&answer).contains("offers: exec_command"), "{answer:?}");
}

#[test]
fn codex_shaped_input_and_outputs() {
    let body = json!({"input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context/>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}]});
    assert_eq!(text(&respond(Vendor::OpenaiResponses, &body)), "hello");
    let body = json!({"input": [{"type": "function_call_output", "call_id": "c", "output": "ok"}]});
    assert_eq!(text(&respond(Vendor::OpenaiResponses, &body)), "the tool ran");
    let body = json!({"messages": [{"role": "user", "content": "@hold"}]});
    assert!(matches!(respond(Vendor::Openai, &body), Answer::Held(_)));
}

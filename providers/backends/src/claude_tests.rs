use serde_json::json;
use superpi_proto::{ContentBlock, Usage};

use super::*;
use crate::lines::testing::{recorded, same_at_every_split, translate};

const SESSION: &str = "cf7fadd6-a470-41c7-9c48-6eb4e9937edf";

fn tool_call(command: &str) -> ContentBlock {
    ContentBlock::ToolCall {
        id: "toolu_01".into(),
        name: "Bash".into(),
        arguments: json!({"command": command, "description": "write a marker"}),
    }
}

#[test]
fn an_allowed_tool_call_turn_translates_in_order() {
    let events = same_at_every_split::<Stream>(&recorded("claude_allow.jsonl"));
    let command = "python3 -c \"open(chr(109),chr(119)).write(chr(120))\"";
    let approval = ApprovalRequest {
        id: "e119a256-4478-4f42-84d6-262e59e7c0dc".into(),
        tool_name: "Bash".into(),
        input: json!({"command": command, "description": "write a marker"}),
        tool_call_id: Some("toolu_01".into()),
        reason: Some("This command requires approval".into()),
    };
    assert_eq!(
        events,
        vec![
            BackendEvent::Session { id: SESSION.into() },
            BackendEvent::ThinkingDelta { index: 0, delta: "I should run it.".into() },
            BackendEvent::Message {
                content: vec![ContentBlock::Thinking {
                    thinking: "I should run it.".into(),
                    signature: Some("sig".into()),
                    redacted: false
                }]
            },
            BackendEvent::Message { content: vec![tool_call(command)] },
            BackendEvent::ApprovalRequest(approval),
            BackendEvent::ToolResult {
                tool_call_id: "toolu_01".into(),
                output: "(Bash completed with no output)".into(),
                is_error: false
            },
            BackendEvent::TextDelta { index: 0, delta: "All ".into() },
            BackendEvent::TextDelta { index: 0, delta: "done.".into() },
            BackendEvent::Message { content: vec![ContentBlock::Text { text: "All done.".into() }] },
            BackendEvent::End {
                result: "All done.".into(),
                stop_reason: "end_turn".into(),
                usage: Usage { input_tokens: 22, output_tokens: 25, ..Default::default() },
                cost_usd: Some(0.000588),
            },
        ]
    );
}

#[test]
fn a_refused_call_is_an_error_result_and_the_turn_goes_on() {
    let events = same_at_every_split::<Stream>(&recorded("claude_deny.jsonl"));
    assert!(events.contains(&BackendEvent::ToolResult {
        tool_call_id: "toolu_01".into(),
        output: "The person refused.".into(),
        is_error: true
    }));
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "All done."));
    // A resumed session keeps its id.
    assert_eq!(events[0], BackendEvent::Session { id: SESSION.into() });
}

#[test]
fn an_unanswered_request_fails_the_call_closed() {
    let events = translate::<Stream>(&[&recorded("claude_unanswered.jsonl")]);
    assert!(events.iter().any(|e| matches!(e, BackendEvent::ApprovalRequest(r) if r.tool_name == "Bash")));
    assert!(events.iter().any(|e| matches!(e, BackendEvent::ToolResult { is_error: true, output, .. }
        if output.contains("permission stream closed"))));
}

#[test]
fn an_api_error_fails_the_turn_with_claudes_words() {
    let events = same_at_every_split::<Stream>(&recorded("claude_fail.jsonl"));
    let Some(BackendEvent::Failed { message }) = events.last() else { panic!("{events:?}") };
    assert!(message.starts_with("API Error: 500 Internal server error."), "{message}");
    // The synthetic assistant message that carries the error is shown as the answer.
    assert!(events.iter().any(|e| matches!(e, BackendEvent::Message { .. })));
}

#[test]
fn retries_other_requests_subagents_and_stray_lines() {
    let input = concat!(
        r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1049,"error_status":529,"error":"overloaded","session_id":"s"}"#,
        "\n",
        r#"{"type":"control_request","request_id":"r9","request":{"subtype":"hook_callback","callback_id":"x"}}"#,
        "\n",
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"sub"}},"session_id":"s","parent_tool_use_id":"toolu_9"}"#,
        "\n",
        "Warning: something\n",
        r#"{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s","errors":[]}"#,
    );
    let events = same_at_every_split::<Stream>(input.as_bytes());
    assert_eq!(
        events,
        vec![
            BackendEvent::Session { id: "s".into() },
            BackendEvent::Retrying { attempt: 2, delay_ms: 1049, reason: "529 overloaded".into() },
            BackendEvent::Unsupported { request_id: "r9".into(), what: "hook_callback".into() },
            BackendEvent::Notice { level: "info", message: "claude: Warning: something".into() },
            BackendEvent::Failed { message: "Claude Code ended the turn with `error_max_turns` []".into() },
        ]
    );
}

#[test]
fn input_lines_are_what_claude_reads() {
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&prompt_line("hi\nthere", &[])).unwrap(),
        json!({"type": "user", "message": {"role": "user", "content": "hi\nthere"}})
    );
    let image = PromptImage { media_type: "image/png".into(), data: "iVBORw0KGgo=".into() };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&prompt_line("what is it?", &[image])).unwrap(),
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "what is it?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
        ]}})
    );
    let request = ApprovalRequest {
        id: "r1".into(),
        tool_name: "Bash".into(),
        input: json!({"command": "ls"}),
        tool_call_id: None,
        reason: None,
    };
    let allow: serde_json::Value = serde_json::from_str(&approval_line(&request, &Approval::Allow)).unwrap();
    assert_eq!(
        allow,
        json!({"type": "control_response", "response": {"subtype": "success", "request_id": "r1",
            "response": {"behavior": "allow", "updatedInput": {"command": "ls"}}}})
    );
    let deny = approval_line(&request, &Approval::Deny { message: "no".into() });
    assert!(deny.ends_with('\n') && deny.contains(r#""behavior":"deny","message":"no""#));
    assert!(refusal_line("r2", "hook_callback").contains(r#""subtype":"error""#));
}

#[test]
fn modes_choose_claudes_permission_mode() {
    assert_eq!(permission_mode(Mode::Plan, true), "plan");
    assert_eq!(permission_mode(Mode::AcceptEdits, true), "acceptEdits");
    assert_eq!(permission_mode(Mode::Auto, true), "bypassPermissions");
    assert_eq!(permission_mode(Mode::Auto, false), "acceptEdits");
    let a = args(Mode::Plan, true, Some("claude-opus-4-5"), Some(Effort::High), Some("s-1"));
    assert!(a.windows(2).any(|w| w == ["--model", "claude-opus-4-5"]));
    assert!(a.windows(2).any(|w| w == ["--permission-mode", "plan"]));
    assert!(a.windows(2).any(|w| w == ["--resume", "s-1"]));
    assert!(a.windows(2).any(|w| w == ["--effort", "high"]));
    assert!(a.windows(2).any(|w| w == ["--permission-prompt-tool", "stdio"]));
    assert!(a.windows(2).any(|w| w == ["--setting-sources", "user"]), "no project settings the agent can write");
    let bare = args(Mode::Plan, true, None, None, None);
    assert!(!bare.contains(&"--resume".to_string()) && !bare.contains(&"--model".to_string()));
    assert!(!bare.contains(&"--effort".to_string()), "without an effort Claude Code keeps its own");
}

/// Claude Code's own server tools (here Anthropic's tool search it sent, then its web search):
/// their blocks are hosted activity under Claude Code's tag, never a tool call superpi would
/// show, count or ask about; the calls it runs itself stay calls.
#[test]
fn server_tool_blocks_are_hosted_not_calls() {
    let search = json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "tool_search_tool_bm25", "input": {"query": "weather"}});
    let found = json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01", "content":
        {"type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "mcp__w__forecast"}]}});
    let web = json!({"type": "server_tool_use", "id": "srvtoolu_02", "name": "web_search", "input": {"query": "Oslo"}});
    let pages = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_02", "content": []});
    let call = json!({"type": "tool_use", "id": "toolu_01", "name": "mcp__w__forecast", "input": {"city": "Oslo"}});
    let assistant = |blocks: Vec<serde_json::Value>| {
        json!({"type": "assistant", "message": {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": blocks, "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 1}},
            "parent_tool_use_id": null, "session_id": SESSION})
    };
    let lines = [
        assistant(vec![search.clone()]),
        assistant(vec![found.clone()]),
        assistant(vec![web.clone(), pages.clone()]),
        assistant(vec![call]),
    ];
    let bytes: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let events = same_at_every_split::<Stream>(bytes.as_bytes());
    let hosted = |block: &serde_json::Value| ContentBlock::Hosted { provider: HOSTED.into(), block: block.clone() };
    assert_eq!(
        events,
        vec![
            BackendEvent::Session { id: SESSION.into() },
            BackendEvent::Message { content: vec![hosted(&search)] },
            BackendEvent::Message { content: vec![hosted(&found)] },
            BackendEvent::Message { content: vec![hosted(&web), hosted(&pages)] },
            BackendEvent::Message {
                content: vec![ContentBlock::ToolCall {
                    id: "toolu_01".into(),
                    name: "mcp__w__forecast".into(),
                    arguments: json!({"city": "Oslo"})
                }]
            },
        ]
    );
}

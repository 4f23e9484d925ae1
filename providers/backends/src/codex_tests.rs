use serde_json::json;
use superpi_proto::{ContentBlock, Usage};

use std::path::Path;

use super::*;
use crate::lines::testing::{recorded, same_at_every_split};

const METADATA: &str = "Model metadata for `gpt-5.1-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.";
const COMMAND: &str = "/bin/bash -lc 'echo hi > m.txt'";

/// The events of a recorded turn whose command Codex asked about, up to the command's result.
fn asked_turn(thread: &str) -> Vec<BackendEvent> {
    let turn_start = json!({"id": 2, "method": "turn/start",
        "params": {"threadId": thread, "input": [{"type": "text", "text": ""}]}});
    vec![
        BackendEvent::Session { id: thread.into() },
        BackendEvent::Write { line: format!("{turn_start}\n") },
        BackendEvent::Notice { level: "warning", message: METADATA.into() },
        BackendEvent::Message {
            content: vec![ContentBlock::ToolCall {
                id: "call_1".into(),
                name: "shell".into(),
                arguments: json!({"command": COMMAND}),
            }],
        },
        BackendEvent::ApprovalRequest(ApprovalRequest {
            id: "0".into(),
            tool_name: "shell".into(),
            input: json!({"command": COMMAND}),
            tool_call_id: Some("call_1".into()),
            reason: None,
        }),
    ]
}

fn answered(result: BackendEvent) -> Vec<BackendEvent> {
    vec![
        result,
        BackendEvent::TextDelta { index: 0, delta: "done".into() },
        BackendEvent::Message { content: vec![ContentBlock::Text { text: "done".into() }] },
        BackendEvent::End {
            result: "done".into(),
            stop_reason: "end_turn".into(),
            usage: Usage { input_tokens: 20, output_tokens: 6, ..Default::default() },
            cost_usd: None,
        },
    ]
}

#[test]
fn an_approved_command_turn_translates_in_order() {
    let events = same_at_every_split::<Stream>(&recorded("codex_allow.jsonl"));
    let mut expected = asked_turn("01a23387-42a8-7911-bb51-6fa8f8b8a658");
    let ran = BackendEvent::ToolResult { tool_call_id: "call_1".into(), output: String::new(), is_error: false };
    expected.extend(answered(ran));
    assert_eq!(events, expected);
}

#[test]
fn a_declined_command_is_an_error_result_and_the_turn_goes_on() {
    let events = same_at_every_split::<Stream>(&recorded("codex_deny.jsonl"));
    let mut expected = asked_turn("01a23387-64c2-7ad3-90e7-10a59cf38271");
    let refused = BackendEvent::ToolResult {
        tool_call_id: "call_1".into(),
        output: "The command was refused, so it did not run.".into(),
        is_error: true,
    };
    expected.extend(answered(refused));
    assert_eq!(events, expected);
}

#[test]
fn other_items_errors_and_requests() {
    let lines = [
        json!({"id": 1, "result": {"thread": {"id": "t-1"}}}),
        json!({"id": 2, "result": {"turn": {"id": "turn-1"}}}),
        // Usage of an earlier turn (a resumed thread) is not this turn's.
        json!({"method": "thread/tokenUsage/updated", "params": {"turnId": "turn-0", "tokenUsage": {"last": {"inputTokens": 99, "outputTokens": 99}}}}),
        json!({"method": "item/reasoning/summaryTextDelta", "params": {"itemId": "r", "delta": "hmm"}}),
        json!({"method": "item/completed", "params": {"item": {"id": "r", "type": "reasoning", "summary": ["hmm"], "content": []}}}),
        json!({"method": "item/started", "params": {"item": {"id": "c", "type": "commandExecution", "command": "ls", "status": "inProgress"}}}),
        json!({"method": "item/commandExecution/outputDelta", "params": {"itemId": "c", "delta": "a\n"}}),
        json!({"method": "item/commandExecution/outputDelta", "params": {"itemId": "c", "delta": "b\n"}}),
        json!({"method": "item/completed", "params": {"item": {"id": "c", "type": "commandExecution", "command": "ls", "aggregatedOutput": null, "exitCode": 2, "status": "failed"}}}),
        json!({"method": "item/completed", "params": {"item": {"id": "f", "type": "fileChange", "changes": [{"path": "a.rs", "kind": {"type": "update"}}], "status": "completed"}}}),
        json!({"method": "item/completed", "params": {"item": {"id": "m", "type": "mcpToolCall", "server": "docs", "tool": "search", "arguments": {"q": "x"}, "error": {"message": "down"}, "status": "failed"}}}),
        json!({"method": "item/tool/requestUserInput", "id": 7, "params": {}}),
        json!({"method": "error", "params": {"error": {"message": "busy"}, "willRetry": true}}),
        json!({"method": "item/agentMessage/delta", "params": {"itemId": "a", "delta": "ok"}}),
        json!({"method": "item/completed", "params": {"item": {"id": "a", "type": "agentMessage", "text": "ok"}}}),
        json!({"method": "thread/tokenUsage/updated", "params": {"turnId": "turn-1", "tokenUsage": {"last": {"inputTokens": 5, "outputTokens": 2}}}}),
        json!({"method": "turn/completed", "params": {"turn": {"id": "turn-1", "status": "failed", "error": {"message": "quota"}}}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let events = same_at_every_split::<Stream>(input.as_bytes());
    let call = |id: &str, name: &str, arguments| BackendEvent::Message {
        content: vec![ContentBlock::ToolCall { id: id.into(), name: name.into(), arguments }],
    };
    let result = |id: &str, output: &str, is_error| BackendEvent::ToolResult {
        tool_call_id: id.into(),
        output: output.into(),
        is_error,
    };
    let turn_start = json!({"id": 2, "method": "turn/start", "params": {"threadId": "t-1", "input": [{"type": "text", "text": ""}]}});
    assert_eq!(
        events,
        vec![
            BackendEvent::Session { id: "t-1".into() },
            BackendEvent::Write { line: format!("{turn_start}\n") },
            BackendEvent::ThinkingDelta { index: 0, delta: "hmm".into() },
            BackendEvent::Message {
                content: vec![ContentBlock::Thinking { thinking: "hmm".into(), signature: None, redacted: false }]
            },
            call("c", "shell", json!({"command": "ls"})),
            result("c", "a\nb\n", true),
            call("f", "apply_patch", json!({"changes": [{"path": "a.rs", "kind": {"type": "update"}}]})),
            result("f", "update a.rs", false),
            call("m", "mcp__docs__search", json!({"q": "x"})),
            result("m", "down", true),
            BackendEvent::Unsupported { request_id: "7".into(), what: "item/tool/requestUserInput".into() },
            BackendEvent::Retrying { attempt: 0, delay_ms: 0, reason: "busy".into() },
            BackendEvent::TextDelta { index: 0, delta: "ok".into() },
            BackendEvent::Message { content: vec![ContentBlock::Text { text: "ok".into() }] },
            BackendEvent::Failed { message: "quota".into() },
        ]
    );
}

#[test]
fn a_refused_start_fails_the_turn() {
    let input = format!("{}\n", json!({"id": 1, "error": {"code": -32600, "message": "no such thread"}}));
    let events = same_at_every_split::<Stream>(input.as_bytes());
    assert_eq!(events, vec![BackendEvent::Failed { message: "Codex: no such thread".into() }]);
}

#[test]
fn modes_choose_codexs_sandbox_and_approvals() {
    assert_eq!(policy(Mode::Plan, true), ("read-only", "never"));
    assert_eq!(policy(Mode::AcceptEdits, true), ("danger-full-access", "untrusted"));
    assert_eq!(policy(Mode::Auto, true), ("danger-full-access", "never"));
    assert_eq!(policy(Mode::AcceptEdits, false), ("workspace-write", "untrusted"));
    assert_eq!(policy(Mode::Auto, false), ("workspace-write", "never"));
}

#[test]
fn what_superpi_writes_to_codex() {
    let ws = Path::new("/home/dev/src/my \"demo\".rs");
    let a = args(Some("http://127.0.0.1:9/v1"), ws);
    let provider = r#"model_providers.superpi={name="OpenAI-compatible (OPENAI_BASE_URL)",base_url="http://127.0.0.1:9/v1",env_key="OPENAI_API_KEY",wire_api="responses"}"#;
    // The workspace and each folder above, untrusted: a key with a dot or a quote stays one key.
    let untrusted = r#"projects={"/home/dev/src/my \"demo\".rs"={trust_level="untrusted"},"/home/dev/src"={trust_level="untrusted"},"/home/dev"={trust_level="untrusted"},"/home"={trust_level="untrusted"},"/"={trust_level="untrusted"}}"#;
    assert_eq!(a, ["app-server", "-c", untrusted, "-c", "model_provider=\"superpi\"", "-c", provider]);
    assert_eq!(args(None, ws), ["app-server", "-c", untrusted]);
    let parsed: toml::Table = untrusted.parse().unwrap();
    assert_eq!(parsed["projects"].as_table().unwrap().len(), 5);

    let start = Start {
        prompt: "hi".into(),
        images: Vec::new(),
        cwd: "/w".into(),
        mode: Some(Mode::AcceptEdits),
        confined: true,
        model: Some("gpt-5.1-codex".into()),
        effort: None,
        resume: Some("t-1".into()),
    };
    let lines: Vec<serde_json::Value> = opening(&start).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["method"], "initialize");
    assert_eq!(lines[1], json!({"method": "initialized"}));
    assert_eq!(
        lines[2],
        json!({"id": 1, "method": "thread/resume", "params": {"threadId": "t-1", "cwd": "/w", "model": "gpt-5.1-codex",
               "sandbox": "danger-full-access", "approvalPolicy": "untrusted"}})
    );
    let fresh = opening(&Start { resume: None, model: None, ..start });
    assert!(fresh.lines().nth(2).unwrap().contains("\"method\":\"thread/start\""));

    let request = ApprovalRequest {
        id: "0".into(),
        tool_name: "shell".into(),
        input: json!({}),
        tool_call_id: None,
        reason: None,
    };
    assert_eq!(approval_line(&request, &Approval::Allow), "{\"id\":0,\"result\":{\"decision\":\"accept\"}}\n");
    let no = approval_line(&request, &Approval::Deny { message: "no".into() });
    assert_eq!(no, "{\"id\":0,\"result\":{\"decision\":\"decline\"}}\n");
    let refusal: serde_json::Value = serde_json::from_str(&refusal_line("7", "item/tool/call")).unwrap();
    assert_eq!(refusal["id"], 7);
    assert_eq!(refusal["error"]["code"], -32601);
}

/// The conversation's effort goes with `turn/start` in OpenAI's words (`off` is `minimal`);
/// without one, Codex keeps its own.
#[test]
fn turn_start_carries_the_conversations_effort() {
    let turn_start = |effort| {
        let mut stream = Stream::new(Start { prompt: "hi".into(), effort, ..Default::default() });
        let mut out = Vec::new();
        stream.response(&json!(1), &json!({"id": 1, "result": {"thread": {"id": "t-1"}}}), &mut out);
        let Some(BackendEvent::Write { line }) = out.pop() else { panic!("no turn/start in {out:?}") };
        serde_json::from_str::<serde_json::Value>(&line).unwrap()["params"].clone()
    };
    assert_eq!(turn_start(Some(Effort::High))["effort"], "high");
    assert_eq!(turn_start(Some(Effort::Off))["effort"], "minimal");
    assert!(turn_start(None).get("effort").is_none());
}

#[test]
fn a_plan_update_of_this_turn_is_the_plan() {
    let lines = [
        json!({"id": 1, "result": {"thread": {"id": "t-1"}}}),
        json!({"id": 2, "result": {"turn": {"id": "turn-1"}}}),
        json!({"method": "turn/plan/updated", "params": {"turnId": "turn-0", "plan": [{"step": "old", "status": "pending"}]}}),
        json!({"method": "turn/plan/updated", "params": {"turnId": "turn-1", "explanation": null, "plan": [
            {"step": "Read the code", "status": "completed"},
            {"step": "Fix the bug", "status": "inProgress"}
        ]}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let events = same_at_every_split::<Stream>(input.as_bytes());
    let plans: Vec<&BackendEvent> = events.iter().filter(|e| matches!(e, BackendEvent::Plan { .. })).collect();
    let entry =
        |id: &str, text: &str, completed| superpi_proto::PlanEntry { id: id.into(), text: text.into(), completed };
    assert_eq!(
        plans,
        [&BackendEvent::Plan { entries: vec![entry("1", "Read the code", true), entry("2", "Fix the bug", false)] }]
    );
}

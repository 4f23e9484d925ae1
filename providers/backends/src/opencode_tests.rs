use std::path::Path;

use serde_json::json;
use superpi_providers::sse::SseDecoder;

use super::*;
use crate::event::Approval;
use crate::lines::testing::recorded;

/// The bus's events, decoded from two pieces split at `cut`.
fn decode(bytes: &[u8], cut: usize) -> Vec<superpi_providers::sse::SseEvent> {
    let mut decoder = SseDecoder::new();
    let mut decoded = Vec::new();
    decoder.feed(&bytes[..cut], &mut decoded).unwrap();
    decoder.feed(&bytes[cut..], &mut decoded).unwrap();
    decoder.finish(&mut decoded);
    decoded
}

/// The translated events of a recorded bus (for the session the stream creates first),
/// checked to be the same whatever the byte the stream is split at: the events decode the
/// same, and the translator is a function of them.
fn same_at_every_split(name: &str) -> Vec<BackendEvent> {
    let bytes = recorded(name);
    let whole = decode(&bytes, 0);
    for cut in 1..=bytes.len() {
        assert_eq!(decode(&bytes, cut), whole, "split at byte {cut}");
    }
    let events: Vec<Value> = whole.iter().map(|e| serde_json::from_str(&e.data).unwrap()).collect();
    let created = events.iter().find(|e| e["type"] == "session.created").expect("a session.created");
    let mut stream = Stream::new(created["properties"]["info"]["id"].as_str().unwrap());
    let mut out = Vec::new();
    for event in &events {
        stream.event(event, &mut out);
    }
    assert!(stream.ended(), "the session went idle");
    out
}

fn text_delta(d: &str) -> BackendEvent {
    BackendEvent::TextDelta { index: 0, delta: d.into() }
}

fn thinking_delta(d: &str) -> BackendEvent {
    BackendEvent::ThinkingDelta { index: 0, delta: d.into() }
}

#[test]
fn a_turn_with_reasoning_a_question_and_a_command_translates_in_order() {
    let events = same_at_every_split("opencode_ask.sse");
    let command = "echo from-opencode > marker.txt";
    assert_eq!(
        events,
        vec![
            thinking_delta("I "),
            thinking_delta("should "),
            thinking_delta("write "),
            thinking_delta("it "),
            text_delta("Writing "),
            text_delta("it "),
            text_delta("now."),
            BackendEvent::Message {
                content: vec![
                    ContentBlock::Thinking { thinking: "I should write it ".into(), signature: None, redacted: false },
                    ContentBlock::Text { text: "Writing it now.".into() },
                    ContentBlock::ToolCall {
                        id: "call_bash".into(),
                        name: "bash".into(),
                        arguments: json!({"command": command, "description": "write a marker"}),
                    },
                ]
            },
            BackendEvent::ApprovalRequest(ApprovalRequest {
                id: "per_234a0ba840013ccj5NtMT1pklj".into(),
                tool_name: "bash".into(),
                input: json!({"command": command, "patterns": [command]}),
                tool_call_id: Some("call_bash".into()),
                reason: Some(format!("OpenCode asks to use bash: {command}")),
            }),
            BackendEvent::ToolResult {
                tool_call_id: "call_bash".into(),
                output: "(no output)".into(),
                is_error: false
            },
            text_delta("wrote "),
            text_delta("it"),
            BackendEvent::Message { content: vec![ContentBlock::Text { text: "wrote it".into() }] },
            BackendEvent::End {
                result: "wrote it".into(),
                stop_reason: "end_turn".into(),
                usage: Usage { input_tokens: 240, output_tokens: 14, ..Default::default() },
                cost_usd: None,
            },
        ]
    );
}

#[test]
fn a_refused_model_request_fails_the_turn_with_its_message() {
    let events = same_at_every_split("opencode_fail.sse");
    assert_eq!(events, vec![BackendEvent::Failed { message: "OpenCode: the fake refused".into() }]);
}

#[test]
fn parts_of_a_message_whose_role_comes_later_wait_for_it_and_other_sessions_are_ignored() {
    let part = |session: &str, text: &str| {
        json!({"type": "message.part.updated", "properties": {"sessionID": session, "part": {
            "id": "prt_1", "messageID": "msg_1", "sessionID": session, "type": "text", "text": text,
            "time": {"start": 1, "end": 2}}}})
    };
    let mut stream = Stream::new("ses_a");
    let mut out = Vec::new();
    stream.event(&part("ses_b", "not ours"), &mut out);
    stream.event(&part("ses_a", "ours"), &mut out);
    assert!(out.is_empty(), "{out:?}");
    let info = json!({"type": "message.updated", "properties": {"sessionID": "ses_a",
        "info": {"id": "msg_1", "role": "assistant", "sessionID": "ses_a", "tokens": {"input": 3, "output": 2}}}});
    stream.event(&info, &mut out);
    // A subagent's question (another session) is the turn's.
    let asked = json!({"type": "permission.asked", "properties": {"id": "per_1", "sessionID": "ses_child",
        "permission": "edit", "patterns": ["a.txt"], "metadata": {"filepath": "a.txt"}}});
    stream.event(&asked, &mut out);
    stream.event(&json!({"type": "session.idle", "properties": {"sessionID": "ses_a"}}), &mut out);
    assert_eq!(
        out,
        vec![
            text_delta("ours"),
            BackendEvent::ApprovalRequest(ApprovalRequest {
                id: "per_1".into(),
                tool_name: "edit".into(),
                input: json!({"filepath": "a.txt", "patterns": ["a.txt"]}),
                tool_call_id: None,
                reason: Some("OpenCode asks to use edit: a.txt".into()),
            }),
            BackendEvent::Message { content: vec![ContentBlock::Text { text: "ours".into() }] },
            BackendEvent::End {
                result: "ours".into(),
                stop_reason: "end_turn".into(),
                usage: Usage { input_tokens: 3, output_tokens: 2, ..Default::default() },
                cost_usd: None,
            },
        ]
    );
}

#[test]
fn events_are_routed_by_session_and_subagent_sessions_are_announced() {
    let delta = json!({"type": "message.part.delta", "properties": {"sessionID": "ses_a", "partID": "p"}});
    assert_eq!(session_of(&delta), Some("ses_a"));
    let created = json!({"type": "session.created", "properties": {"sessionID": "ses_c",
        "info": {"id": "ses_c", "parentID": "ses_a"}}});
    assert_eq!(created_child(&created), Some(("ses_c", "ses_a")));
    assert_eq!(session_of(&json!({"type": "server.connected", "properties": {}})), None);
}

#[test]
fn each_mode_has_its_rules_and_opencode_never_asks_its_own_questions() {
    let actions = |mode| {
        let rules = rules(mode);
        rules.as_array().unwrap().iter().map(|r| format!("{}={}", r["permission"], r["action"])).collect::<Vec<_>>()
    };
    let refused = ["\"question\"=\"deny\"", "\"plan_enter\"=\"deny\"", "\"plan_exit\"=\"deny\""];
    assert_eq!(actions(Mode::Plan)[..3], ["\"edit\"=\"deny\"", "\"bash\"=\"deny\"", "\"task\"=\"deny\""]);
    assert_eq!(actions(Mode::AcceptEdits)[..2], ["\"edit\"=\"allow\"", "\"bash\"=\"ask\""]);
    assert_eq!(actions(Mode::Auto)[..1], ["\"*\"=\"allow\""]);
    for mode in [Mode::Plan, Mode::AcceptEdits, Mode::Auto] {
        assert!(actions(mode).ends_with(&refused.map(String::from)), "{mode:?}");
    }
    assert_eq!(reply_body(&Approval::Allow), json!({"reply": "once"}));
    assert_eq!(reply_body(&Approval::Deny { message: "no".into() }), json!({"reply": "reject", "message": "no"}));
}

#[test]
fn the_configuration_names_superpis_model_and_keeps_its_key_out_of_the_file() {
    let endpoint = Endpoint {
        api: "anthropic".into(),
        base_url: "http://127.0.0.1:9/".into(),
        api_key: Some("sk-secret".into()),
        model: "claude-x".into(),
    };
    let config = config(Some(&endpoint), Path::new("/ws"));
    assert_eq!(config["instructions"], json!(["/ws/AGENTS.md"]));
    assert_eq!(config["model"], "superpi/claude-x");
    let provider = &config["provider"]["superpi"];
    assert_eq!(provider["npm"], "@ai-sdk/anthropic");
    assert_eq!(
        provider["options"],
        json!({"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{env:SUPERPI_OPENCODE_API_KEY}"})
    );
    assert!(provider["models"]["claude-x"].is_object());
    assert!(!config.to_string().contains("sk-secret"));
    let openai = Endpoint { api: "openai".into(), base_url: "http://h/v1".into(), api_key: None, model: "m".into() };
    let config = self::config(Some(&openai), Path::new("/ws"));
    assert_eq!(config["provider"]["superpi"]["npm"], "@ai-sdk/openai-compatible");
    assert_eq!(config["provider"]["superpi"]["options"], json!({"baseURL": "http://h/v1"}));
    assert_eq!(prompt_body("hi", Some(&openai))["model"], json!({"providerID": "superpi", "modelID": "m"}));
    assert!(self::config(None, Path::new("/ws")).get("provider").is_none());
}

/// The project's own configuration (which could allow what superpi asks about, or start
/// plugins and MCP servers) is switched off for the server.
#[test]
fn the_server_ignores_the_projects_configuration() {
    let env = fixed_env(Path::new("/h"), "pw");
    assert!(env.contains(&("OPENCODE_DISABLE_PROJECT_CONFIG".into(), "1".into())), "{env:?}");
}

#[test]
fn a_todo_list_of_the_session_is_the_plan() {
    let todos = |session: &str| {
        json!({"type": "todo.updated", "properties": {"sessionID": session, "todos": [
            {"id": "t1", "content": "Read the code", "status": "completed", "priority": "high"},
            {"id": "t2", "content": "Drop the old path", "status": "cancelled", "priority": "low"},
            {"content": "Fix the bug", "status": "in_progress", "priority": "high"}
        ]}})
    };
    let mut stream = Stream::new("ses_a");
    let mut out = Vec::new();
    stream.event(&todos("ses_b"), &mut out);
    assert!(out.is_empty(), "another session's: {out:?}");
    stream.event(&todos("ses_a"), &mut out);
    let entry =
        |id: &str, text: &str, completed| superpi_proto::PlanEntry { id: id.into(), text: text.into(), completed };
    assert_eq!(
        out,
        [BackendEvent::Plan {
            entries: vec![
                entry("t1", "Read the code", true),
                entry("t2", "Drop the old path", true),
                entry("3", "Fix the bug", false)
            ]
        }]
    );
}

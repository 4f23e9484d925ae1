use serde_json::json;
use superpi_proto::{ContentBlock, Usage};

use super::*;
use crate::lines::testing::{recorded, same_at_every_split};

const THREAD: &str = "01a2330e-535b-7343-9943-6130bc39c6ed";
const METADATA: &str = "Model metadata for `gpt-5.1-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.";

#[test]
fn a_command_codex_ran_is_a_tool_call_and_its_result() {
    let events = same_at_every_split::<Stream>(&recorded("codex_tool.jsonl"));
    let command = "/bin/bash -lc 'echo codex-ran > marker.txt && cat marker.txt'";
    assert_eq!(
        events,
        vec![
            BackendEvent::Session { id: THREAD.into() },
            BackendEvent::Notice { level: "warning", message: METADATA.into() },
            BackendEvent::Message {
                content: vec![ContentBlock::ToolCall {
                    id: "item_1".into(),
                    name: "shell".into(),
                    arguments: json!({"command": command})
                }]
            },
            BackendEvent::ToolResult { tool_call_id: "item_1".into(), output: "codex-ran\n".into(), is_error: false },
            BackendEvent::TextDelta { index: 0, delta: "All done.".into() },
            BackendEvent::Message { content: vec![ContentBlock::Text { text: "All done.".into() }] },
            BackendEvent::End {
                result: "All done.".into(),
                stop_reason: "end_turn".into(),
                usage: Usage { input_tokens: 24, output_tokens: 14 }
            },
        ]
    );
}

#[test]
fn a_resumed_thread_keeps_its_id_and_a_failed_turn_fails() {
    let resumed = same_at_every_split::<Stream>(&recorded("codex_resume.jsonl"));
    assert_eq!(resumed[0], BackendEvent::Session { id: THREAD.into() });
    assert!(matches!(resumed.last(), Some(BackendEvent::End { result, .. }) if result == "All done."));
    let failed = same_at_every_split::<Stream>(&recorded("codex_fail.jsonl"));
    let message = "stream disconnected before completion: the fake failed";
    assert_eq!(failed[failed.len() - 2], BackendEvent::Notice { level: "error", message: message.into() });
    assert_eq!(failed.last(), Some(&BackendEvent::Failed { message: message.into() }));
}

#[test]
fn other_items_codex_ran() {
    let input = concat!(
        r#"{"type":"item.completed","item":{"id":"i1","type":"file_change","changes":[{"path":"a.rs","kind":"update"}],"status":"completed"}}"#,
        "\n",
        r#"{"type":"item.started","item":{"id":"i2","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"status":"in_progress"}}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"i2","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"error":{"message":"down"},"status":"failed"}}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"i3","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"i4","type":"reasoning","text":"thinking"}}"#,
        "\n",
    );
    let events = same_at_every_split::<Stream>(input.as_bytes());
    let call = |id: &str, name: &str, arguments| BackendEvent::Message {
        content: vec![ContentBlock::ToolCall { id: id.into(), name: name.into(), arguments }],
    };
    assert_eq!(
        events,
        vec![
            call("i1", "apply_patch", json!({"changes": [{"path": "a.rs", "kind": "update"}]})),
            BackendEvent::ToolResult { tool_call_id: "i1".into(), output: "update a.rs".into(), is_error: false },
            call("i2", "mcp__docs__search", json!({"q": "x"})),
            BackendEvent::ToolResult { tool_call_id: "i2".into(), output: "down".into(), is_error: true },
            call("i3", "shell", json!({"command": "false"})),
            BackendEvent::ToolResult { tool_call_id: "i3".into(), output: String::new(), is_error: true },
            BackendEvent::ThinkingDelta { index: 0, delta: "thinking".into() },
            BackendEvent::Message {
                content: vec![ContentBlock::Thinking { thinking: "thinking".into(), signature: None, redacted: false }]
            },
        ]
    );
}

#[test]
fn modes_choose_codexs_sandbox_and_a_base_url_its_provider() {
    assert_eq!(sandbox_mode(Mode::Plan, true), "read-only");
    assert_eq!(sandbox_mode(Mode::AcceptEdits, true), "danger-full-access");
    assert_eq!(sandbox_mode(Mode::Auto, true), "danger-full-access");
    assert_eq!(sandbox_mode(Mode::Auto, false), "workspace-write");
    let a = args(Mode::AcceptEdits, false, Some("gpt-5.1-codex"), Some("http://127.0.0.1:9/v1"), Some("t-1"));
    assert_eq!(&a[..5], ["exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write"]);
    assert!(a.windows(2).any(|w| w == ["-m", "gpt-5.1-codex"]));
    assert!(a.windows(2).any(|w| w == ["-c", "model_provider=\"superpi\""]));
    let provider = r#"model_providers.superpi={name="OpenAI-compatible (OPENAI_BASE_URL)",base_url="http://127.0.0.1:9/v1",env_key="OPENAI_API_KEY",wire_api="responses"}"#;
    assert!(a.windows(2).any(|w| w == ["-c", provider]), "{a:?}");
    assert_eq!(&a[a.len() - 3..], ["resume", "t-1", "-"]);
    let bare = args(Mode::Plan, false, None, None, None);
    assert_eq!(bare, ["exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only", "-"]);
}

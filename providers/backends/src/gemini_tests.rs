use serde_json::json;
use superpi_proto::{ContentBlock, Usage};

use super::*;
use crate::lines::Translate;
use crate::lines::testing::{recorded, same_at_every_split, translate};

const SHELL: &str = "run_shell_command__run_shell_command_1796167196530_0";
const READ: &str = "read_file__read_file_1796167197219_0";

#[test]
fn a_turn_with_a_command_and_a_failed_read_translates_in_order() {
    let events = same_at_every_split::<Stream>(&recorded("gemini_tools.jsonl"));
    let text = |t: &str| ContentBlock::Text { text: t.into() };
    let delta = |d: &str| BackendEvent::TextDelta { index: 0, delta: d.into() };
    assert_eq!(
        events,
        vec![
            BackendEvent::Session { id: "fbd49cee-03b6-4f3a-835c-85642e537a0c".into() },
            delta("I will write it."),
            BackendEvent::Message {
                content: vec![
                    text("I will write it."),
                    ContentBlock::ToolCall {
                        id: SHELL.into(),
                        name: "run_shell_command".into(),
                        arguments: json!({"command": "echo from-gemini > marker.txt"}),
                    }
                ]
            },
            BackendEvent::ToolResult { tool_call_id: SHELL.into(), output: String::new(), is_error: false },
            BackendEvent::Message {
                content: vec![ContentBlock::ToolCall {
                    id: READ.into(),
                    name: "read_file".into(),
                    arguments: json!({"file_path": "missing.txt"}),
                }]
            },
            BackendEvent::ToolResult {
                tool_call_id: READ.into(),
                output: "File not found: /tmp/be-probe/ws2/missing.txt".into(),
                is_error: true
            },
            delta("Wrote "),
            delta("the marker."),
            BackendEvent::Message { content: vec![text("Wrote the marker.")] },
            BackendEvent::End {
                result: "Wrote the marker.".into(),
                stop_reason: "end_turn".into(),
                usage: Usage { input_tokens: 300, output_tokens: 21, ..Default::default() },
                cost_usd: None,
            },
        ]
    );
}

#[test]
fn a_refused_model_request_fails_the_turn_with_the_api_error() {
    let events = same_at_every_split::<Stream>(&recorded("gemini_fail.jsonl"));
    let [BackendEvent::Session { .. }, BackendEvent::Failed { message }] = &events[..] else { panic!("{events:?}") };
    assert!(message.starts_with("Gemini CLI: [API Error:") && message.contains("the fake refused"), "{message}");
}

#[test]
fn warnings_are_notices_and_output_without_a_result_is_no_end() {
    let line = |v: serde_json::Value| format!("{v}\n");
    let input = line(json!({"type": "error", "severity": "warning", "message": "Loop detected, stopping execution"}))
        + &line(json!({"type": "message", "role": "assistant", "content": "half", "delta": true}));
    let mut t = Translator::default();
    let events = t.push(input.as_bytes());
    assert_eq!(
        events,
        vec![
            BackendEvent::Notice { level: "warning", message: "Gemini CLI: Loop detected, stopping execution".into() },
            BackendEvent::TextDelta { index: 0, delta: "half".into() },
        ]
    );
    // A program that stops here crashed: the driver reports it.
    assert!(!t.ended());
    assert!(translate::<Stream>(&[b"garbage\n"]).iter().all(|e| matches!(e, BackendEvent::Notice { .. })));
}

#[test]
fn the_mode_chooses_the_approval_mode_and_the_settings_say_how_to_sign_in() {
    assert_eq!(approval_mode(Mode::Plan), "plan");
    // accept-edits offers every tool; superpi's hook asks about all but reads and edits.
    assert_eq!(approval_mode(Mode::AcceptEdits), "yolo");
    assert_eq!(approval_mode(Mode::Auto), "yolo");
    assert_eq!([Mode::Plan, Mode::AcceptEdits, Mode::Auto].map(asks_about), [false, true, false]);
    let args = args(Mode::Auto, Some("gemini-2.5-flash"), Some("abc"));
    assert_eq!(
        args,
        [
            "--output-format",
            "stream-json",
            "--approval-mode",
            "yolo",
            "--skip-trust",
            "--model",
            "gemini-2.5-flash",
            "--resume",
            "abc"
        ]
    );
    let env = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    let kernel = env(&[("GEMINI_API_KEY", "k"), ("GEMINI_BASE_URL", "http://127.0.0.1:9")]);
    assert_eq!(settings(&kernel, None, "superpi-ask-x")["security"]["auth"]["selectedType"], "gemini-api-key");
    assert_eq!(
        settings(&env(&[("GOOGLE_GENAI_USE_VERTEXAI", "true")]), None, "superpi-ask-x")["security"]["auth"]["selectedType"],
        "vertex-ai"
    );
    assert_eq!(settings(&[], None, "superpi-ask-x")["security"]["auth"], json!({}));
    let hooks = &settings(&[], None, "superpi-ask-x")["hooks"]["BeforeTool"][0];
    assert_eq!(hooks["hooks"][0]["command"], ASK_HOOK);
    assert_eq!(hooks["hooks"][0]["name"], "superpi-ask-x");
    // Each turn's hook has a name of its own, which no workspace file can have listed.
    let (a, b) = (hook_name().unwrap(), hook_name().unwrap());
    assert!(a.starts_with("superpi-ask-") && a.len() == "superpi-ask-".len() + 32 && a != b, "{a} {b}");
    // The workspace's `.env` is the project's: the CLI takes no variables from it.
    assert_eq!(settings(&[], None, "h")["advanced"]["ignoreLocalEnv"], true);
    let matcher = hooks["matcher"].as_str().unwrap();
    assert!(matcher.starts_with("^(?!(read_file|") && matcher.contains("|replace|") && matcher.ends_with(")$)"));
    let fixed = fixed_env("/h", &kernel);
    assert!(fixed.contains(&("GOOGLE_GEMINI_BASE_URL".into(), "http://127.0.0.1:9".into())), "{fixed:?}");
    // The CLI's own variable wins over superpi's provider's.
    let both = env(&[("GEMINI_BASE_URL", "http://a"), ("GOOGLE_GEMINI_BASE_URL", "http://b")]);
    assert!(!fixed_env("/h", &both).iter().any(|(k, _)| k == "GOOGLE_GEMINI_BASE_URL"));
}

/// A question through superpi's hook is about the running call of that name and input (the
/// hook names no call id); its answer is the hook's decision line.
#[test]
fn a_hooks_question_is_about_the_running_call_it_names() {
    let mut t = Translator::default();
    let call = br#"{"type":"tool_use","tool_name":"run_shell_command","tool_id":"run_shell_command__1","parameters":{"command":"echo hi"}}
"#;
    t.push(call);
    let input = json!({"command": "echo hi"});
    let asked = t.ask("/h/asks/turn.x/ask.1".into(), &json!({"tool_name": "run_shell_command", "tool_input": input}));
    let [BackendEvent::ApprovalRequest(request)] = &asked[..] else { panic!("{asked:?}") };
    assert_eq!(request.tool_call_id.as_deref(), Some("run_shell_command__1"));
    assert_eq!((request.id.as_str(), &request.input), ("/h/asks/turn.x/ask.1", &input));
    t.push(
        br#"{"type":"tool_result","tool_id":"run_shell_command__1","status":"success","output":""}
"#,
    );
    let later = t.ask("/h/asks/turn.x/ask.2".into(), &json!({"tool_name": "run_shell_command", "tool_input": input}));
    let [BackendEvent::ApprovalRequest(request)] = &later[..] else { panic!("{later:?}") };
    assert_eq!(request.tool_call_id, None, "a call whose result came is not asked about");
    assert_eq!(hook_answer(&crate::event::Approval::Allow), "{\"decision\":\"allow\"}\n");
}

/// A conversation's effort becomes an override of Gemini CLI's model configs for the model
/// asked for; a model without a thinking setting gets none.
#[test]
fn an_effort_is_a_model_config_override_for_the_model() {
    let settings = settings(&[], Some(("gemini-2.5-flash", Effort::Low)), "h");
    assert_eq!(
        settings["modelConfigs"]["customOverrides"],
        json!([{"match": {"model": "gemini-2.5-flash"},
                "modelConfig": {"generateContentConfig": {"thinkingConfig": {"includeThoughts": true, "thinkingBudget": 1024}}}}])
    );
    let gemini3 = super::settings(&[], Some(("gemini-3-pro-preview", Effort::Medium)), "h");
    let config = &gemini3["modelConfigs"]["customOverrides"][0]["modelConfig"]["generateContentConfig"];
    assert_eq!(config["thinkingConfig"]["thinkingLevel"], "low", "the nearest level 3 Pro takes");
    assert!(super::settings(&[], Some(("gemini-2.0-flash", Effort::High)), "h").get("modelConfigs").is_none());
    assert!(super::settings(&[], None, "h").get("modelConfigs").is_none());
}

//! Gemini CLI itself (`gemini`, headless, stream-json), at the version `.ci/run` pins, driven
//! through the sandbox against the Gemini fake with no network beyond 127.0.0.1. Skipped,
//! saying so, when the program is not installed in the test cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use superpi_backends::{Approval, BackendEvent, BackendKind, TurnSpec};
use superpi_policy::Mode;
use superpi_proto::ContentBlock;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::GeminiFake;

use crate::common;

use common::{env, run, session, spec};

/// A model named outright: without one the CLI first asks a small model to route the prompt.
const MODEL: &str = "gemini-2.5-flash";

fn call_named<'a>(events: &'a [BackendEvent], tool: &str) -> Option<(&'a str, &'a serde_json::Value)> {
    events.iter().find_map(|e| match e {
        BackendEvent::Message { content } => content.iter().find_map(|b| match b {
            ContentBlock::ToolCall { id, name, arguments } if name == tool => Some((id.as_str(), arguments)),
            _ => None,
        }),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_runs_a_command_in_auto_and_plan_offers_no_shell() {
    let Some(program) = common::program(BackendKind::GeminiCli) else { return };
    let env = env();
    let fake = GeminiFake::start(vec![
        Answer::text("noted"),
        Answer::tool_call("run_shell_command", json!({"command": "echo from-gemini > marker.txt"})),
        Answer::text("wrote it"),
    ])
    .await
    .unwrap();
    let turn_spec = |mode, prompt, resume| TurnSpec {
        model: Some(MODEL.into()),
        resume,
        ..spec(&env, BackendKind::GeminiCli, &program, &fake, mode, prompt)
    };
    let mut turn =
        superpi_backends::start(&env.sandbox, turn_spec(Mode::Auto, "the colour is blue", None)).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    let id = session(&events);
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "noted"), "{events:?}");

    // A new process resumes the session (the model sees the first turn) and runs a command.
    let mut turn = superpi_backends::start(&env.sandbox, turn_spec(Mode::Auto, "write the marker", Some(id.clone())))
        .await
        .unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    assert_eq!(session(&events), id);
    let (call_id, arguments) = call_named(&events, "run_shell_command").unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(arguments["command"], "echo from-gemini > marker.txt");
    assert!(
        events.iter().any(
            |e| matches!(e, BackendEvent::ToolResult { tool_call_id, is_error: false, .. } if tool_call_id == call_id)
        ),
        "{events:?}"
    );
    let Some(BackendEvent::End { result, usage, .. }) = events.last() else { panic!("{events:?}") };
    assert_eq!(result, "wrote it");
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0, "{usage:?}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("marker.txt")).unwrap(), "from-gemini\n");
    let accepted = fake.accepted();
    let resumed = accepted[1].to_string();
    assert!(resumed.contains("the colour is blue") && resumed.contains("noted"), "{resumed}");
    // The model saw the command's result.
    let result = accepted[2].to_string();
    assert!(result.contains("functionResponse") && result.contains("run_shell_command"), "{result}");

    // In plan mode the shell is not offered: the call fails and nothing is written.
    fake.push(Answer::tool_call("run_shell_command", json!({"command": "echo again > refused.txt"})));
    fake.push(Answer::text("planned"));
    let mut turn = superpi_backends::start(&env.sandbox, turn_spec(Mode::Plan, "and now?", None)).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(events.iter().any(|e| matches!(e, BackendEvent::ToolResult { is_error: true, .. })), "{events:?}");
    assert!(!env.workspace.join("refused.txt").exists());
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "planned"), "{events:?}");
    let offered = fake.accepted()[3]["tools"].to_string();
    assert!(!offered.contains("run_shell_command") && offered.contains("read_file"), "{offered}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// A failing model API ends the turn with the CLI's error, not a crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_api_fails_the_turn() {
    let Some(program) = common::program(BackendKind::GeminiCli) else { return };
    let env = env();
    let refusal = superpi_providers::testing::Reply::error(
        400,
        r#"{"error":{"code":400,"message":"the fake refused","status":"INVALID_ARGUMENT"}}"#,
    );
    let fake = GeminiFake::start(vec![Answer::Reply(refusal)]).await.unwrap();
    let spec = TurnSpec {
        model: Some(MODEL.into()),
        ..spec(&env, BackendKind::GeminiCli, &program, &fake, Mode::AcceptEdits, "hi")
    };
    let mut turn = superpi_backends::start(&env.sandbox, spec).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    let Some(BackendEvent::Failed { message }) = events.last() else { panic!("{events:?}") };
    assert!(message.contains("the fake refused"), "{message}");
}

/// Headless Gemini CLI reads its prompt as text: a prompt with an image is refused before
/// anything starts, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_image_is_refused_saying_why() {
    let env = env();
    let fake = GeminiFake::start(vec![]).await.unwrap();
    let image = superpi_backends::PromptImage { media_type: "image/png".into(), data: common::PNG.into() };
    let program = std::path::PathBuf::from("/bin/false");
    let spec = TurnSpec {
        images: vec![image],
        ..spec(&env, BackendKind::GeminiCli, &program, &fake, Mode::Auto, "what is this?")
    };
    let refused = superpi_backends::start(&env.sandbox, spec).await.unwrap_err();
    assert!(refused.contains("Gemini CLI takes no images"), "{refused}");
    assert!(fake.requests().is_empty());
}

/// In `accept-edits` superpi's hook asks about the shell (confined with the CLI): allowed,
/// the command runs; refused, it does not, and the model reads superpi's reason. An edit runs
/// without a question. Each question names the call the CLI announced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_edits_asks_superpi_before_a_command_and_a_refusal_reaches_the_model() {
    let Some(program) = common::program(BackendKind::GeminiCli) else { return };
    let env = env();
    let edit = env.workspace.join("edit.txt").display().to_string();
    let fake = GeminiFake::start(vec![
        Answer::tool_call("write_file", json!({"file_path": edit, "content": "edited"})),
        Answer::tool_call("run_shell_command", json!({"command": "echo allowed > allowed.txt"})),
        Answer::text("done"),
        Answer::tool_call("run_shell_command", json!({"command": "echo refused > refused.txt"})),
        Answer::text("could not"),
    ])
    .await
    .unwrap();
    let turn_spec = |prompt| TurnSpec {
        model: Some(MODEL.into()),
        ..spec(&env, BackendKind::GeminiCli, &program, &fake, Mode::AcceptEdits, prompt)
    };
    let asked = |events: &[BackendEvent]| -> Vec<superpi_backends::ApprovalRequest> {
        let requests = events.iter().filter_map(|e| match e {
            BackendEvent::ApprovalRequest(request) => Some(request.clone()),
            _ => None,
        });
        requests.collect()
    };
    let mut turn = superpi_backends::start(&env.sandbox, turn_spec("edit, then run")).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    let [request] = &asked(&events)[..] else { panic!("one question: {events:?}") };
    assert_eq!(
        (request.tool_name.as_str(), &request.input["command"]),
        ("run_shell_command", &json!("echo allowed > allowed.txt"))
    );
    let (call_id, _) = call_named(&events, "run_shell_command").unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(request.tool_call_id.as_deref(), Some(call_id), "the question names the announced call");
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "done"), "{events:?}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("edit.txt")).unwrap(), "edited");
    assert_eq!(std::fs::read_to_string(env.workspace.join("allowed.txt")).unwrap(), "allowed\n");

    let mut turn = superpi_backends::start(&env.sandbox, turn_spec("run another")).await.unwrap();
    let events = run(&mut turn, Approval::Deny { message: "The person refused this call.".into() }).await;
    assert_eq!(asked(&events).len(), 1, "{events:?}");
    let refused = events.iter().any(|e| {
        matches!(e, BackendEvent::ToolResult { is_error: true, output, .. } if output.contains("The person refused this call."))
    });
    assert!(refused, "{events:?}");
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "could not"), "{events:?}");
    assert!(!env.workspace.join("refused.txt").exists());
    let heard = fake.accepted().last().unwrap().to_string();
    assert!(heard.contains("The person refused this call."), "the model reads why: {heard}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    let asks = env.sessions.home(BackendKind::GeminiCli).unwrap().join("asks");
    assert_eq!(std::fs::read_dir(asks).unwrap().count(), 0, "each turn's questions went with it");
}

/// Gemini CLI killed mid-turn (its model request in flight): the turn ends with a notice and its
/// failure, and the next turn starts the program again and works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_turn_fails_the_turn_and_the_next_turn_starts_it_again() {
    let Some(program) = common::program(BackendKind::GeminiCli) else { return };
    let env = env();
    let fake = GeminiFake::start(common::crash_script()).await.unwrap();
    let spec = || TurnSpec {
        model: Some(MODEL.into()),
        ..spec(&env, BackendKind::GeminiCli, &program, &fake, Mode::AcceptEdits, "hi")
    };
    common::crash_then_next_turn(&env, spec, &fake).await;
}

/// The conversation's thinking effort reaches the Gemini API through Gemini CLI's settings
/// (an override of its model configs for the model asked for) as superpi's own requests carry
/// it: 2.5 Flash gets a `thinkingBudget` (0 for `off`); without one, Gemini CLI keeps its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversations_effort_reaches_the_gemini_api() {
    let Some(program) = common::program(BackendKind::GeminiCli) else { return };
    let env = env();
    let fake = GeminiFake::start(vec![Answer::text("thought"); 4]).await.unwrap();
    let sent = common::requests_per_effort(&env, BackendKind::GeminiCli, &program, &fake, MODEL, Mode::Plan).await;
    let sent: Vec<_> =
        sent.iter().map(|body| body["generationConfig"]["thinkingConfig"]["thinkingBudget"].clone()).collect();
    assert_eq!(sent[1..], [json!(0), json!(1024), json!(24_576)], "{sent:?}");
    assert_ne!(sent[0], json!(1024), "Gemini CLI's own budget: {sent:?}");
}

//! Codex itself (`codex app-server`), at the version `.ci/run` pins, driven through the
//! sandbox against the Responses-API fake with no network beyond 127.0.0.1. Skipped, saying so, when the program
//! is not installed in the test cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use superpi_backends::{Approval, BackendEvent, BackendKind, TurnSpec};
use superpi_policy::Mode;
use superpi_proto::ContentBlock;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::ResponsesFake;

use crate::common;

use common::{env, run, session, spec};

/// The model whose tools include `exec_command` (Codex's default offers a JavaScript tool).
const MODEL: &str = "gpt-5.1-codex";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_command_runs_confined_a_refused_one_does_not_and_the_thread_continues() {
    let Some(program) = common::program(BackendKind::Codex) else { return };
    let env = env();
    let fake = ResponsesFake::start(vec![
        Answer::tool_call("exec_command", json!({"cmd": "echo from-codex > marker.txt"})),
        Answer::text("wrote it"),
    ])
    .await
    .unwrap();
    let first = TurnSpec {
        model: Some(MODEL.into()),
        ..spec(&env, BackendKind::Codex, &program, &fake, Mode::AcceptEdits, "write the marker")
    };
    let mut turn = superpi_backends::start(&env.sandbox, first).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    let thread = session(&events);
    let call = events.iter().find_map(|e| match e {
        BackendEvent::Message { content } => match &content[..] {
            [ContentBlock::ToolCall { id, name, arguments }] if name == "shell" => {
                Some((id.clone(), arguments.clone()))
            }
            _ => None,
        },
        _ => None,
    });
    let (call_id, arguments) = call.unwrap_or_else(|| panic!("no shell call in {events:?}"));
    // In accept-edits Codex asks before it runs a command it does not know to be safe.
    assert!(
        events.iter().any(
            |e| matches!(e, BackendEvent::ApprovalRequest(r) if r.tool_call_id.as_deref() == Some(call_id.as_str()))
        ),
        "{events:?}"
    );
    assert!(arguments["command"].as_str().unwrap().contains("echo from-codex > marker.txt"), "{arguments}");
    assert!(
        events.iter().any(
            |e| matches!(e, BackendEvent::ToolResult { tool_call_id, is_error: false, .. } if *tool_call_id == call_id)
        ),
        "{events:?}"
    );
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            BackendEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "wrote it", "the answer streams as deltas");
    let Some(BackendEvent::End { result, usage, .. }) = events.last() else { panic!("{events:?}") };
    assert_eq!(result, "wrote it");
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0, "{usage:?}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("marker.txt")).unwrap(), "from-codex\n");
    // The model saw the command's output as the call's result.
    let second = fake.accepted()[1].to_string();
    assert!(second.contains("function_call_output") && second.contains("echo from-codex"), "{second}");

    // A new process resumes the thread (the model sees the first turn); a refused command
    // does not run.
    fake.push(Answer::tool_call("exec_command", json!({"cmd": "echo again > refused.txt"})));
    fake.push(Answer::text("still here"));
    let next = TurnSpec {
        model: Some(MODEL.into()),
        resume: Some(thread.clone()),
        ..spec(&env, BackendKind::Codex, &program, &fake, Mode::AcceptEdits, "and now?")
    };
    let mut turn = superpi_backends::start(&env.sandbox, next).await.unwrap();
    let events = run(&mut turn, Approval::Deny { message: "no".into() }).await;
    assert_eq!(session(&events), thread);
    assert!(events.iter().any(|e| matches!(e, BackendEvent::ToolResult { is_error: true, .. })), "{events:?}");
    assert!(!env.workspace.join("refused.txt").exists());
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "still here"), "{events:?}");
    let last = fake.accepted().pop().unwrap().to_string();
    assert!(last.contains("wrote it") && last.contains("and now?"), "{last}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// A failing model API ends the turn with Codex's error, not a crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_api_fails_the_turn() {
    let Some(program) = common::program(BackendKind::Codex) else { return };
    let env = env();
    let refusal = superpi_providers::testing::Reply::error(
        400,
        r#"{"error":{"message":"the fake refused","type":"invalid_request_error","param":null,"code":null}}"#,
    );
    let fake = ResponsesFake::start(vec![Answer::Reply(refusal)]).await.unwrap();
    let spec = TurnSpec {
        model: Some(MODEL.into()),
        ..spec(&env, BackendKind::Codex, &program, &fake, Mode::AcceptEdits, "hi")
    };
    let mut turn = superpi_backends::start(&env.sandbox, spec).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    let Some(BackendEvent::Failed { message }) = events.last() else { panic!("{events:?}") };
    assert!(message.contains("the fake refused"), "{message}");
}

/// In `plan` Codex's sandbox is `read-only` and it asks nothing (`never`): a command the model
/// asks for does not run (inside superpi's confinement Codex's own sandbox cannot start one at
/// all), nobody is asked, and the model gets the failure as the call's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_runs_no_command_and_asks_nothing() {
    let Some(program) = common::program(BackendKind::Codex) else { return };
    let env = env();
    let fake = ResponsesFake::start(vec![
        Answer::tool_call("exec_command", json!({"cmd": "echo planned > planned.txt"})),
        Answer::text("only a plan"),
    ])
    .await
    .unwrap();
    let spec = TurnSpec {
        model: Some(MODEL.into()),
        ..spec(&env, BackendKind::Codex, &program, &fake, Mode::Plan, "plan it")
    };
    let mut turn = superpi_backends::start(&env.sandbox, spec).await.unwrap();
    // Allowing everything asked: in plan nothing may be asked, so nothing is allowed by it.
    let events = run(&mut turn, Approval::Allow).await;
    assert!(!events.iter().any(|e| matches!(e, BackendEvent::ApprovalRequest(_))), "{events:?}");
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "only a plan"), "{events:?}");
    assert!(!env.workspace.join("planned.txt").exists(), "the command ran in plan mode");
    // The model saw the command fail (Codex's read-only sandbox could not start it: "error
    // building bubblewrap command").
    let second = fake.accepted()[1].to_string();
    assert!(second.contains("function_call_output") && second.contains("exited with code 1"), "{second}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// A prompt's image reaches Codex in `turn/start` (a data URL) and goes on to the Responses API
/// as an `input_image` of the user's message (the fake checks its rules).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_image_reaches_the_model_api() {
    let Some(program) = common::program(BackendKind::Codex) else { return };
    let env = env();
    let fake = ResponsesFake::start(vec![Answer::text("a pixel")]).await.unwrap();
    let image = superpi_backends::PromptImage { media_type: "image/png".into(), data: common::PNG.into() };
    let spec = TurnSpec {
        model: Some(MODEL.into()),
        images: vec![image],
        ..spec(&env, BackendKind::Codex, &program, &fake, Mode::AcceptEdits, "what is this?")
    };
    let mut turn = superpi_backends::start(&env.sandbox, spec).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "a pixel"), "{events:?}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    let sent = fake.accepted().pop().unwrap().to_string();
    assert!(sent.contains("input_image") && sent.contains(&format!("data:image/png;base64,{}", common::PNG)), "{sent}");
}

/// Codex killed mid-turn (its model request in flight): the turn ends with a notice and its
/// failure, and the next turn starts the program again and works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_turn_fails_the_turn_and_the_next_turn_starts_it_again() {
    let Some(program) = common::program(BackendKind::Codex) else { return };
    let env = env();
    let fake = ResponsesFake::start(common::crash_script()).await.unwrap();
    let spec = || TurnSpec {
        model: Some(MODEL.into()),
        ..spec(&env, BackendKind::Codex, &program, &fake, Mode::AcceptEdits, "hi")
    };
    common::crash_then_next_turn(&env, spec, &fake).await;
}

/// The conversation's thinking effort goes with `turn/start` and Codex sends it on as the
/// Responses API's `reasoning.effort` (`off` as `minimal`; the fake checks the values the API
/// takes); without one, Codex keeps its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversations_effort_reaches_the_responses_api() {
    let Some(program) = common::program(BackendKind::Codex) else { return };
    let env = env();
    let fake = ResponsesFake::start(vec![Answer::text("thought"); 4]).await.unwrap();
    let sent = common::requests_per_effort(&env, BackendKind::Codex, &program, &fake, MODEL, Mode::AcceptEdits).await;
    let sent: Vec<_> = sent.iter().map(|body| body["reasoning"]["effort"].clone()).collect();
    assert_eq!(sent, [json!(null), json!("minimal"), json!("low"), json!("high")]);
}

/// Codex reads the fake's reasoning items and sends each back whole (`encrypted_content`, no
/// id to look up) in its next request, which the fake verifies: the fake's Responses stream and
/// rules agree with OpenAI's own client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_sends_the_reasoning_items_back_as_the_fake_requires() {
    let Some(program) = common::program(BackendKind::Codex) else { return };
    let env = env();
    let fake = ResponsesFake::start(vec![
        Answer::tool_call("exec_command", json!({"cmd": "echo reasoned"})),
        Answer::text("done"),
    ])
    .await
    .unwrap();
    fake.set_reasoning("Running it first.");
    let spec =
        TurnSpec { model: Some(MODEL.into()), ..spec(&env, BackendKind::Codex, &program, &fake, Mode::Auto, "run it") };
    let mut turn = superpi_backends::start(&env.sandbox, spec).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "done"), "{events:?}");
    assert_eq!(fake.rejections(), vec![]);
    let second = fake.accepted()[1].clone();
    let reasoning: Vec<_> = second["input"].as_array().unwrap().iter().filter(|i| i["type"] == "reasoning").collect();
    assert_eq!(reasoning.len(), 1, "{second}");
    let encrypted = reasoning[0]["encrypted_content"].as_str().unwrap();
    assert_eq!(superpi_providers::testing::rules::responses::reasoning_item_of(encrypted).as_deref(), Some("rs_fake1"));
}

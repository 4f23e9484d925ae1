//! Claude Code itself, at the version `.ci/run` pins, driven through the sandbox against the
//! Anthropic fake with no network beyond 127.0.0.1. Skipped, saying so, when the program is
//! not installed in the test cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use superpi_backends::{Approval, BackendEvent, BackendKind, TurnSpec};
use superpi_policy::Mode;
use superpi_proto::ContentBlock;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::AnthropicFake;

use crate::common;

use common::{env, run, session, spec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_turn_runs_confined_and_the_session_continues() {
    let Some(program) = common::program(BackendKind::ClaudeCode) else { return };
    let env = env();
    let command = "/usr/bin/python3 -c \"open('marker.txt','w').write('ran')\"";
    let fake = AnthropicFake::start(vec![
        Answer::tool_call("Bash", json!({"command": command, "description": "write a marker"})),
        Answer::text("wrote it"),
    ])
    .await
    .unwrap();
    fake.accept_betas();
    let first = spec(&env, BackendKind::ClaudeCode, &program, &fake, Mode::AcceptEdits, "write the marker");
    let mut turn = superpi_backends::start(&env.sandbox, first).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    let session = session(&events);
    assert!(
        events.iter().any(|e| matches!(e, BackendEvent::Message { content }
        if matches!(&content[..], [ContentBlock::ToolCall { name, .. }] if name == "Bash"))),
        "{events:?}"
    );
    assert!(events.iter().any(|e| matches!(e, BackendEvent::ApprovalRequest(r) if r.tool_name == "Bash")));
    assert!(events.iter().any(|e| matches!(e, BackendEvent::ToolResult { is_error: false, .. })), "{events:?}");
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "wrote it"), "{events:?}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("marker.txt")).unwrap(), "ran");

    // A new process resumes the session: the model sees the first turn.
    fake.push(Answer::text("still here"));
    let next = TurnSpec {
        resume: Some(session),
        ..spec(&env, BackendKind::ClaudeCode, &program, &fake, Mode::AcceptEdits, "and now?")
    };
    let mut turn = superpi_backends::start(&env.sandbox, next).await.unwrap();
    let events = run(&mut turn, Approval::Deny { message: "no".into() }).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "still here"), "{events:?}");
    let last = fake.accepted().pop().unwrap();
    assert!(last.to_string().contains("wrote it") && last.to_string().contains("and now?"), "{last}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// A prompt's image reaches Claude Code in its stream-json input and goes on to the model API
/// as an image block of the user's message (the fake checks the Messages API's rules).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_image_reaches_the_model_api() {
    let Some(program) = common::program(BackendKind::ClaudeCode) else { return };
    let env = env();
    let fake = AnthropicFake::start(vec![Answer::text("a pixel")]).await.unwrap();
    fake.accept_betas();
    let image = superpi_backends::PromptImage { media_type: "image/png".into(), data: common::PNG.into() };
    let spec = TurnSpec {
        images: vec![image],
        ..spec(&env, BackendKind::ClaudeCode, &program, &fake, Mode::AcceptEdits, "what is this?")
    };
    let mut turn = superpi_backends::start(&env.sandbox, spec).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "a pixel"), "{events:?}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    let sent = fake.accepted().pop().unwrap().to_string();
    let block = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": common::PNG}});
    assert!(sent.contains(&block.to_string()), "{sent}");
}

/// Claude Code killed mid-turn (its model request in flight): the turn ends with a notice and its
/// failure, and the next turn starts the program again and works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_turn_fails_the_turn_and_the_next_turn_starts_it_again() {
    let Some(program) = common::program(BackendKind::ClaudeCode) else { return };
    let env = env();
    let fake = AnthropicFake::start(common::crash_script()).await.unwrap();
    fake.accept_betas();
    let spec = || spec(&env, BackendKind::ClaudeCode, &program, &fake, Mode::AcceptEdits, "hi");
    common::crash_then_next_turn(&env, spec, &fake).await;
}

/// The conversation's thinking effort reaches Claude Code as `--effort`, which it sends on
/// to the Messages API as `output_config.effort`; `off` is its least effort with thinking
/// turned off (as superpi's own Anthropic requests have no thinking then). Without one,
/// Claude Code keeps its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversations_effort_reaches_the_model_api() {
    let Some(program) = common::program(BackendKind::ClaudeCode) else { return };
    let env = env();
    let fake = AnthropicFake::start(vec![Answer::text("thought"); 4]).await.unwrap();
    fake.accept_betas();
    let sent = common::requests_per_effort(
        &env,
        BackendKind::ClaudeCode,
        &program,
        &fake,
        "claude-opus-4-5",
        Mode::AcceptEdits,
    )
    .await;
    let sent: Vec<_> =
        sent.iter().map(|body| (body["output_config"]["effort"].clone(), body["thinking"]["type"].clone())).collect();
    let [own, off, low, high] = &sent[..] else { unreachable!() };
    assert_eq!(own.1, "enabled", "Claude Code's own choice thinks: {sent:?}");
    assert_eq!(off, &(json!("low"), json!("disabled")));
    assert_eq!(low, &(json!("low"), json!("enabled")));
    assert_eq!(high, &(json!("high"), json!("enabled")));
}

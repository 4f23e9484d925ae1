//! End to end: who consents to a call the kernel would ask about (`superpi mcp --approval`),
//! through the real `superpi mcp` process and a real kernel. The default client here behaves
//! like OpenCode's: it calls tools and declares no elicitation, so nobody can be asked.
//!
//! Build the binary first: `cargo build -p superpi-cli && cargo test -p superpi-mcp`.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{ClientSetup, Session, call_tool, connect_with, text};
use rmcp::model::{ElicitationAction, ProtocolVersion};
use serde_json::json;
use superpi_tests::TestEnv;

const VERSION: ProtocolVersion = ProtocolVersion::V_2025_06_18;

/// A workspace with a deny list in the user's settings and a file the denied command would
/// remove.
fn env_with_a_deny_list() -> TestEnv {
    let env = TestEnv::new();
    std::fs::write(env.locations.config_dir.join("settings.json"), r#"{"permissions": {"deny": ["rm -rf *"]}}"#)
        .unwrap();
    std::fs::write(env.workspace.join("keep.txt"), "k").unwrap();
    env
}

async fn bash(session: &Session, command: &str) -> (bool, String) {
    let result = call_tool(session, "bash", json!({ "command": command })).await.unwrap();
    (result.is_error == Some(true), text(&result))
}

/// One `harness_task` turn that runs `command` through the bash tool; its answer text.
async fn task_running(session: &Session, command: &str) -> String {
    let prompt = format!("@tool bash {}", json!({ "command": command }));
    let result = call_tool(session, "harness_task", json!({ "prompt": prompt })).await.unwrap();
    text(&result)
}

/// Refusals that no consent lifts: a deny-listed command, a write outside the workspace (by
/// the write tool: the policy; by a shell line: the sandbox), a protected path.
async fn assert_never_askable_refusals_hold(env: &TestEnv, session: &Session) {
    let (refused, out) = bash(session, "rm -rf keep.txt").await;
    assert!(refused && out.contains("permissions.deny"), "{out}");
    assert!(env.workspace.join("keep.txt").exists());
    let outside = env.path().join("outside.txt");
    let write = json!({"path": outside.display().to_string(), "content": "x"});
    let result = call_tool(session, "write", write).await.unwrap();
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    assert!(!outside.exists());
    let (refused, out) = bash(session, &format!("touch {}", outside.display())).await;
    assert!(refused, "{out}");
    assert!(!outside.exists());
    let result = call_tool(session, "write", json!({"path": ".env", "content": "SECRET=1"})).await.unwrap();
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    assert!(!env.workspace.join(".env").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_the_host_consents_within_the_mode() {
    let env = env_with_a_deny_list();
    let session = connect_with(&env, VERSION, ClientSetup::default()).await;

    let (refused, out) = bash(&session, "echo hi; pwd").await;
    assert!(!refused, "{out}");
    let workspace = env.workspace.canonicalize().unwrap().display().to_string();
    assert!(out.contains("hi\n") && out.contains(&workspace), "{out}");
    let (refused, out) = bash(&session, "echo $((6*7))").await;
    assert!(!refused && out.contains("42"), "{out}");
    // A command the remote mode would ask about runs on the host's consent.
    let (refused, out) = bash(&session, "touch made.txt && echo made").await;
    assert!(!refused && out.contains("made"), "{out}");
    assert!(env.workspace.join("made.txt").exists());

    assert_never_askable_refusals_hold(&env, &session).await;

    // A harness_task turn's question is answered the same way.
    let answer = task_running(&session, "touch by-task.txt").await;
    assert!(env.workspace.join("by-task.txt").exists(), "{answer}");
    session.client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuse_refuses_what_would_be_asked() {
    let env = env_with_a_deny_list();
    let setup = ClientSetup { args: vec!["--approval", "refuse"], ..Default::default() };
    let session = connect_with(&env, VERSION, setup).await;

    let (refused, out) = bash(&session, "touch made.txt").await;
    assert!(refused && out.contains("allow list"), "{out}");
    assert!(!env.workspace.join("made.txt").exists());
    // Read-only commands need nobody's consent.
    let (refused, out) = bash(&session, "echo hi; pwd").await;
    assert!(!refused && out.contains("hi"), "{out}");

    task_running(&session, "touch by-task.txt").await;
    assert!(!env.workspace.join("by-task.txt").exists());
    session.client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicit_asks_a_client_that_can_answer() {
    let env = env_with_a_deny_list();
    let answers = vec![
        ElicitationAction::Accept,
        ElicitationAction::Decline,
        ElicitationAction::Accept,
        ElicitationAction::Accept,
    ];
    let setup = ClientSetup { args: vec!["--approval", "elicit"], elicitation: Some(answers), ..Default::default() };
    let mut session = connect_with(&env, VERSION, setup).await;

    // Accepted: it runs, and the question named the command.
    let (refused, out) = bash(&session, "touch yes.txt").await;
    assert!(!refused, "{out}");
    assert!(env.workspace.join("yes.txt").exists());
    let asked = session.asked.try_recv().expect("the user was asked");
    assert!(asked.contains("touch yes.txt") && asked.contains("allow list"), "{asked}");
    // Declined: refused, and the answer says so.
    let (refused, out) = bash(&session, "touch no.txt").await;
    assert!(refused && out.contains("declined"), "{out}");
    assert!(!env.workspace.join("no.txt").exists());
    assert!(session.asked.try_recv().is_ok());
    // Nobody is asked about a read-only command, nor about what stays refused.
    let (refused, _) = bash(&session, "echo hi").await;
    assert!(!refused);
    assert_never_askable_refusals_hold(&env, &session).await;
    // Only the shell line that writes outside is put to the user (a shell line's paths are the
    // sandbox's to confine): accepted, and the sandbox still refused it.
    let asked = session.asked.try_recv().expect("the shell write outside was asked about");
    assert!(asked.contains("outside.txt"), "{asked}");
    assert!(session.asked.try_recv().is_err(), "asked about a call that needs no answer");

    // A harness_task turn asks too: the last answer accepts.
    task_running(&session, "touch by-task.txt").await;
    assert!(env.workspace.join("by-task.txt").exists());
    let asked = session.asked.try_recv().expect("the task's question was put to the user");
    assert!(asked.contains("touch by-task.txt"), "{asked}");
    session.client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicit_without_the_capability_refuses_and_the_mode_is_a_ceiling() {
    let env = env_with_a_deny_list();
    let setup = ClientSetup { args: vec!["--approval", "elicit"], ..Default::default() };
    let session = connect_with(&env, VERSION, setup).await;
    let (refused, out) = bash(&session, "touch made.txt").await;
    assert!(refused && out.contains("allow list"), "{out}");
    assert!(!env.workspace.join("made.txt").exists());
    task_running(&session, "touch by-task.txt").await;
    assert!(!env.workspace.join("by-task.txt").exists());
    session.client.cancel().await.expect("close");

    // The host's consent does not lift plan mode; reads still run.
    let setup = ClientSetup { args: vec!["--mode", "plan"], ..Default::default() };
    let session = connect_with(&env, VERSION, setup).await;
    let (refused, out) = bash(&session, "touch made.txt").await;
    assert!(refused, "{out}");
    assert!(!env.workspace.join("made.txt").exists());
    let (refused, out) = bash(&session, "echo hi").await;
    assert!(!refused && out.contains("hi"), "{out}");
    session.client.cancel().await.expect("close");
}

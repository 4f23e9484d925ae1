//! Claude Code itself, at the version `.ci/run` pins, driven through the sandbox against the
//! Anthropic fake with no network beyond 127.0.0.1. Skipped, saying so, when the program is
//! not installed in the test cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use superpi_backends::{Approval, BackendEvent, BackendKind, RunningTurn, Sessions, TurnSpec};
use superpi_policy::Mode;
use superpi_proto::ContentBlock;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer};
use superpi_sandbox::{Sandbox, SandboxConfig};

fn claude() -> Option<PathBuf> {
    let program = superpi_backends::discover::test_install(BackendKind::ClaudeCode);
    if program.is_none() {
        eprintln!("SKIPPED: Claude Code is not installed in the test cache (.ci/run installs it)");
    }
    program
}

struct Env {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    sessions: Sessions,
    sandbox: Sandbox,
}

fn env() -> Env {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let workspace = base.join("workspace");
    let data_dir = base.join("data");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&data_dir).unwrap();
    let sandbox = Sandbox::new(SandboxConfig::new(data_dir.clone())).unwrap();
    Env { _root: root, workspace, sessions: Sessions::new(&data_dir), sandbox }
}

fn spec(env: &Env, program: &std::path::Path, fake: &FakeServer, prompt: &str, resume: Option<String>) -> TurnSpec {
    TurnSpec {
        kind: BackendKind::ClaudeCode,
        program: program.to_path_buf(),
        workspace: env.workspace.clone(),
        mode: Mode::AcceptEdits,
        prompt: prompt.into(),
        resume,
        home: env.sessions.home(BackendKind::ClaudeCode).unwrap(),
        install_dirs: superpi_backends::install_dirs(program),
        env: fake.env(),
        confined: true,
    }
}

/// Every event of the turn, answering approvals with `approval`, within a deadline.
async fn run(turn: &mut RunningTurn, approval: Approval) -> Vec<BackendEvent> {
    let mut events = Vec::new();
    let all = async {
        while let Some(event) = turn.next().await {
            if let BackendEvent::ApprovalRequest(request) = &event {
                turn.answer(request, &approval).await;
            }
            events.push(event);
        }
    };
    tokio::time::timeout(Duration::from_secs(120), all).await.expect("the turn did not end within 120 s");
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_turn_runs_confined_and_the_session_continues() {
    let Some(program) = claude() else { return };
    let env = env();
    let command = "/usr/bin/python3 -c \"open('marker.txt','w').write('ran')\"";
    let fake = AnthropicFake::start(vec![
        Answer::tool_call("Bash", json!({"command": command, "description": "write a marker"})),
        Answer::text("wrote it"),
    ])
    .await
    .unwrap();
    fake.accept_betas();
    let mut turn =
        superpi_backends::start(&env.sandbox, spec(&env, &program, &fake, "write the marker", None)).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    let session = events.iter().find_map(|e| match e {
        BackendEvent::Session { id } => Some(id.clone()),
        _ => None,
    });
    let session = session.expect("a session id");
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
    let mut turn =
        superpi_backends::start(&env.sandbox, spec(&env, &program, &fake, "and now?", Some(session.clone())))
            .await
            .unwrap();
    let events = run(&mut turn, Approval::Deny { message: "no".into() }).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "still here"), "{events:?}");
    let last = fake.accepted().pop().unwrap();
    assert!(last.to_string().contains("wrote it") && last.to_string().contains("and now?"), "{last}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

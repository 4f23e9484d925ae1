//! What the driver tests of each backend share: the program from the test cache, a sandbox
//! over a fresh workspace and data directory, a turn's spec, and a turn run to its end.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use superpi_backends::{Approval, BackendEvent, BackendKind, RunningTurn, Sessions, TurnSpec};
use superpi_policy::Mode;
use superpi_providers::testing::fakes::FakeServer;
use superpi_sandbox::{Sandbox, SandboxConfig};

/// The backend's program from the test cache; `None`, saying so, when it is not installed.
pub fn program(kind: BackendKind) -> Option<PathBuf> {
    let program = superpi_backends::discover::test_install(kind);
    if program.is_none() {
        eprintln!("SKIPPED: {} is not installed in the test cache (.ci/run installs it)", kind.title());
    }
    program
}

pub struct Env {
    _root: tempfile::TempDir,
    pub workspace: PathBuf,
    pub sessions: Sessions,
    pub sandbox: Sandbox,
}

pub fn env() -> Env {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let workspace = base.join("workspace");
    let data_dir = base.join("data");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&data_dir).unwrap();
    let sandbox = Sandbox::new(SandboxConfig::new(data_dir.clone())).unwrap();
    Env { _root: root, workspace, sessions: Sessions::new(&data_dir), sandbox }
}

/// A 1x1 PNG, in base64.
pub const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A confined turn in `mode` against `fake`.
pub fn spec(env: &Env, kind: BackendKind, program: &Path, fake: &FakeServer, mode: Mode, prompt: &str) -> TurnSpec {
    TurnSpec {
        kind,
        program: program.to_path_buf(),
        workspace: env.workspace.clone(),
        mode,
        prompt: prompt.into(),
        images: Vec::new(),
        model: None,
        effort: None,
        resume: None,
        home: env.sessions.home(kind).unwrap(),
        install_dirs: superpi_backends::install_dirs(program),
        env: fake.env(),
        confined: true,
        endpoint: None,
    }
}

/// Every event of the turn, answering approvals with `approval`, within a deadline.
pub async fn run(turn: &mut RunningTurn, approval: Approval) -> Vec<BackendEvent> {
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

/// The backend's session id the turn reported.
pub fn session(events: &[BackendEvent]) -> String {
    let session = events.iter().find_map(|e| match e {
        BackendEvent::Session { id } => Some(id.clone()),
        _ => None,
    });
    session.expect("a session id")
}

/// A model reply that never comes: the request stays in flight until the client goes.
pub fn held() -> superpi_providers::testing::answers::Answer {
    let reply = superpi_providers::testing::Reply { hold: true, ..superpi_providers::testing::Reply::stream(b"", 1) };
    superpi_providers::testing::answers::Answer::Reply(reply)
}

/// Kills the turn's program once its model request is in flight (its whole process group,
/// with SIGKILL, as a crash would), and checks what the turn says: a notice that it stopped
/// and that the next prompt starts it again, then the failure.
pub async fn crash_mid_turn(turn: &mut RunningTurn, fake: &FakeServer) {
    // The turn's events are taken meanwhile: Codex's prompt is written once its thread's id
    // is read (`BackendEvent::Write`, sent by `next`).
    let mut events = Vec::new();
    let asked = fake.wait_for_requests(1, Duration::from_secs(120));
    tokio::pin!(asked);
    loop {
        tokio::select! {
            asked = &mut asked => {
                assert!(asked, "the program asked its model within 120 s: {events:?}");
                break;
            }
            event = turn.next() => match event {
                Some(event) => events.push(event),
                None => panic!("the turn ended before its model was asked: {events:?}"),
            },
        }
    }
    let pid = turn.pid().expect("the turn's process");
    #[allow(clippy::disallowed_methods)] // the test kills the program as a crash would
    let status = std::process::Command::new("kill").args(["-KILL", "--", &format!("-{pid}")]).status().unwrap();
    assert!(status.success(), "kill -{pid}");
    events.extend(run(turn, Approval::Allow).await);
    let notice = events.iter().find_map(|e| match e {
        BackendEvent::Notice { level: "error", message } => Some(message.clone()),
        _ => None,
    });
    let notice = notice.unwrap_or_else(|| panic!("no notice in {events:?}"));
    assert!(notice.contains("stopped before its turn ended") && notice.contains("The next prompt starts it again"));
    let Some(BackendEvent::Failed { message }) = events.last() else { panic!("{events:?}") };
    assert!(message.contains("signal: 9"), "{message}");
}

/// The script of a crash test's fake: the first request held (the crash comes meanwhile), the
/// next answered `back again`.
pub fn crash_script() -> Vec<superpi_providers::testing::answers::Answer> {
    vec![held(), superpi_providers::testing::answers::Answer::text("back again")]
}

/// A turn of `spec` killed mid-turn ([`crash_mid_turn`]), then the next turn of the same spec,
/// which starts the program again and ends with the fake's `back again`.
pub async fn crash_then_next_turn(env: &Env, spec: impl Fn() -> TurnSpec, fake: &FakeServer) {
    let mut turn = superpi_backends::start(&env.sandbox, spec()).await.unwrap();
    crash_mid_turn(&mut turn, fake).await;
    let mut turn = superpi_backends::start(&env.sandbox, spec()).await.unwrap();
    let events = run(&mut turn, Approval::Allow).await;
    assert!(matches!(events.last(), Some(BackendEvent::End { result, .. }) if result == "back again"), "{events:?}");
}

/// One turn of `kind` on `model` for each effort (none, then `off`, `low`, `high`), each
/// ending well; of each, the request the fake last accepted.
pub async fn requests_per_effort(
    env: &Env,
    kind: BackendKind,
    program: &Path,
    fake: &FakeServer,
    model: &str,
    mode: Mode,
) -> Vec<serde_json::Value> {
    use superpi_proto::Effort;
    let mut sent = Vec::new();
    for effort in [None, Some(Effort::Off), Some(Effort::Low), Some(Effort::High)] {
        let spec = TurnSpec { effort, model: Some(model.into()), ..spec(env, kind, program, fake, mode, "think") };
        let mut turn = superpi_backends::start(&env.sandbox, spec).await.unwrap();
        let events = run(&mut turn, Approval::Allow).await;
        assert!(matches!(events.last(), Some(BackendEvent::End { .. })), "{effort:?}: {events:?}");
        sent.push(fake.accepted().pop().unwrap());
    }
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    sent
}

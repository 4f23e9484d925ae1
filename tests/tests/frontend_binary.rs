//! The frontends' own binary: `superpi acp` and `superpi mcp` become `superpi-frontend` (the
//! same process, by exec) and serve; `superpi-frontend` started directly autostarts the full
//! `superpi` as its kernel, whose confined tools run; `SUPERPI_FRONTEND_EXEC=0`, or a
//! `superpi-frontend` of another build, keeps the role in `superpi`.
//!
//! Build both binaries first: `cargo build -p superpi-cli`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::PathBuf;

use serde_json::{Value, json};
use superpi_tests::stdio::Stdio2;
use superpi_tests::{TestEnv, frontend_bin, superpi_bin};

fn canonical(path: PathBuf) -> PathBuf {
    path.canonicalize().unwrap()
}

fn acp_initialize() -> Value {
    json!({"protocolVersion": 1, "clientCapabilities": {}})
}

fn mcp_initialize() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}})
}

#[tokio::test]
async fn acp_and_mcp_through_superpi_run_as_the_frontend_binary() {
    let env = TestEnv::new();
    for (role, init) in [("acp", acp_initialize()), ("mcp", mcp_initialize())] {
        let mut frontend = Stdio2::spawn(env.command(&[role]));
        let pid = frontend.child.id();
        let answer = frontend.call(0, "initialize", init.clone(), |_| None).await;
        assert!(answer["protocolVersion"].is_number() || answer["protocolVersion"].is_string(), "{answer}");
        assert_eq!(frontend.child.id(), pid, "the same process");
        assert_eq!(
            canonical(frontend.exe()),
            canonical(frontend_bin()),
            "superpi {role} (a superpi-frontend of another build is not used: build both, `cargo build -p superpi-cli`)"
        );

        // Told not to, superpi serves the role itself.
        let mut cmd = env.command(&[role]);
        cmd.env("SUPERPI_FRONTEND_EXEC", "0");
        let mut inside = Stdio2::spawn(cmd);
        inside.call(0, "initialize", init, |_| None).await;
        assert_eq!(canonical(inside.exe()), canonical(superpi_bin()), "superpi {role} with SUPERPI_FRONTEND_EXEC=0");
    }
    // The MCP settings commands stay in superpi (they would be a usage error in the frontend).
    let out = env.command(&["mcp", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no MCP servers"), "{out:?}");
}

/// Beside a `superpi-frontend` of another build (a script here: it carries no build identity,
/// as one left from an earlier build carries another), `superpi acp` serves in its own process.
#[tokio::test]
async fn a_frontend_of_another_build_is_not_run() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let superpi = dir.path().join("superpi");
    if std::fs::hard_link(superpi_bin(), &superpi).is_err() {
        std::fs::copy(superpi_bin(), &superpi).unwrap();
    }
    let stale = dir.path().join("superpi-frontend");
    std::fs::write(&stale, "#!/bin/sh\necho 'the stale frontend ran' >&2\nexit 9\n").unwrap();
    std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o755)).unwrap();

    let mut cmd = std::process::Command::new(&superpi);
    cmd.arg("acp").current_dir(&env.workspace);
    env.apply_env(&mut cmd);
    let mut acp = Stdio2::spawn(cmd);
    let answer = acp.call(0, "initialize", acp_initialize(), |_| None).await;
    assert!(answer["protocolVersion"].is_number(), "{answer}");
    assert_eq!(canonical(acp.exe()), canonical(superpi), "served by superpi itself");
}

#[tokio::test]
async fn the_frontend_binary_autostarts_superpi_as_its_kernel() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("hello.txt"), "read through the frontend's kernel\n").unwrap();
    assert_eq!(env.kernel_pid(), None, "no kernel yet");
    let mut cmd = std::process::Command::new(frontend_bin());
    cmd.arg("acp").current_dir(&env.workspace);
    env.apply_env(&mut cmd);
    let mut acp = Stdio2::spawn(cmd);
    acp.call(0, "initialize", acp_initialize(), |_| None).await;
    // session/new reaches the kernel: none runs, so the frontend starts one.
    let session = acp.call(1, "session/new", json!({"cwd": env.workspace, "mcpServers": []}), |_| None).await;
    let kernel = env.kernel_pid().expect("a kernel was started");
    let kernel_exe = std::fs::read_link(format!("/proc/{kernel}/exe")).unwrap();
    assert_eq!(canonical(kernel_exe), canonical(superpi_bin()), "the kernel is the full binary");

    // A turn whose tool runs confined (the kernel's tool runner is `superpi`, never the frontend).
    let mut text = String::new();
    let prompt = json!({"sessionId": session["sessionId"], "prompt": [
        {"type": "text", "text": "@tool read {\"path\": \"hello.txt\"}"}]});
    let done = acp
        .prompt_allowing(2, prompt, |update| {
            if update["sessionUpdate"] == json!("agent_message_chunk") {
                text.push_str(update["content"]["text"].as_str().unwrap_or(""));
            }
        })
        .await;
    assert_eq!(done["stopReason"], json!("end_turn"), "{done}");
    assert!(text.contains("read through the frontend's kernel"), "the tool's result is quoted: {text:?}");
}

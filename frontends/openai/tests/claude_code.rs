//! Claude Code itself with the gateway as its model: `claude -p` (the version `.ci/run` pins in
//! the backends' test cache) with `ANTHROPIC_BASE_URL` pointing at a real `superpi gateway` on
//! the mock model, with a token, offline. Skipped, saying so, when Claude Code is not
//! installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // a test runs claude

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Gateway;
use superpi_backends::BackendKind;

const TOKEN: &str = "claude-code-key";
const LIMIT: Duration = Duration::from_secs(120);

/// Runs `claude ARGS` in `workspace` against the gateway at `base` and returns its stdout; it
/// must succeed within [`LIMIT`]. Its environment is only what it needs: the gateway and its
/// token, a private home and configuration directory, and no traffic but the model API's (the
/// variables superpi's own Claude Code backend sets).
fn claude(program: &Path, home: &Path, workspace: &Path, base: &str, args: &[&str]) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ANTHROPIC_BASE_URL", base)
        .env("ANTHROPIC_API_KEY", TOKEN)
        // A failure shows at once instead of after Claude Code's retries.
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .envs(superpi_backends::claude::fixed_env(&home.display().to_string()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("start claude");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(LIMIT) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: kill(2) on the child this test started, which has not been reaped.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
            panic!("claude {args:?} did not end within {LIMIT:?}");
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "claude {args:?} failed ({:?}):\n{stdout}\n{stderr}", out.status);
    stdout
}

/// Claude Code sends its own tools and system prompt; the agent's answer (after a tool of its
/// own ran in the gateway's workspace) comes back as text, which `claude -p` prints. Then
/// `--continue` goes on in the same superpi conversation: Claude Code resends the whole
/// history, the gateway submits only the new prompt, so the echo is exactly that prompt.
#[test]
fn claude_p_prints_the_agents_answer_and_continues_its_session() {
    let Some(program) = superpi_backends::discover::test_install(BackendKind::ClaudeCode) else {
        eprintln!("SKIPPED: Claude Code is not installed in the test cache (.ci/run installs it)");
        return;
    };
    let gw = Gateway::start(&[], &[("SUPERPI_GATEWAY_TOKEN", TOKEN)]);
    std::fs::write(gw.env.workspace.join("marker.txt"), "read through claude code and superpi").unwrap();
    let home = tempfile::tempdir().unwrap();
    // Claude Code runs in a directory of its own: the agent works in the gateway's workspace.
    let cwd = tempfile::tempdir().unwrap();

    let answer = claude(&program, home.path(), cwd.path(), &gw.base, &["-p", "@tool read {\"path\": \"marker.txt\"}"]);
    assert!(answer.contains("The tools answered. read returned:"), "{answer}");
    assert!(answer.contains("read through claude code and superpi"), "{answer}");

    let again = claude(&program, home.path(), cwd.path(), &gw.base, &["-p", "--continue", "and once more"]);
    assert_eq!(again.trim(), "and once more", "a new conversation would have been seeded with the transcript");
}

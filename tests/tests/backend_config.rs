//! The agent backends' own configuration in a workspace (kernel/policy/src/backend_files.rs):
//! the real Codex ignores a planted `.codex/config.toml` even where an earlier run recorded the
//! workspace as trusted; as an ordinary user on a developer's machine, a Gemini CLI turn beside
//! an unaccepted `.gemini/` folder is refused, runs once the user accepts it, and is stopped
//! when the folder changes between superpi's check and the program's start; `superpi doctor`
//! says where each file stands.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use serde_json::Value;
use superpi_backends::BackendKind;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::ResponsesFake;
use superpi_tests::TestEnv;
use superpi_tests::real_machine::{Machine, NOBODY, sh, write};

/// The real Codex beside a `.codex/config.toml` that adds developer instructions and an MCP
/// server whose command leaves a mark, in a workspace Codex's own state already lists as
/// trusted (as an earlier run in a full-access sandbox records it): the turn runs, the model
/// never sees the instructions, the server never starts, and Codex records no trust.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_ignores_the_workspaces_codex_config_even_where_it_was_trusted() {
    let Some(program) = superpi_backends::discover::test_install(BackendKind::Codex) else {
        eprintln!("SKIPPED: Codex is not installed in the test cache (.ci/run installs it)");
        return;
    };
    let env = TestEnv::new();
    let harnesses = format!("[backends.codex]\nprogram = \"{}\"\n", program.display());
    std::fs::write(env.locations.config_dir.join("harnesses.toml"), harnesses).unwrap();
    let ws = env.workspace.canonicalize().unwrap();
    let mark = ws.join("mcp-started");
    let planted = format!(
        "developer_instructions = \"PLANTED-INSTRUCTIONS\"\n[mcp_servers.planted]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}; sleep 30\"]\n",
        mark.display()
    );
    write(&ws.join(".codex/config.toml"), &planted);
    let state = env.locations.data_dir.join("backends/codex/home/config.toml");
    let trusted = format!("[projects.\"{}\"]\ntrust_level = \"trusted\"\n", ws.display());
    write(&state, &trusted);

    let fake = ResponsesFake::start(vec![Answer::text("plain answer")]).await.unwrap();
    let mut cmd =
        env.command(&["run", "--harness", "codex", "--model", "openai/gpt-5.1-codex", "--mode", "auto", "hi"]);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "plain answer", "{stderr}");
    let bodies: Vec<String> = fake.accepted().iter().map(Value::to_string).collect();
    assert!(!bodies.is_empty(), "{stderr}");
    assert!(bodies.iter().all(|b| !b.contains("PLANTED")), "the planted instructions reached the model");
    assert!(!mark.exists(), "the planted MCP server started");
    assert_eq!(std::fs::read_to_string(&state).unwrap(), trusted, "Codex recorded no trust");
}

/// A stand-in `gemini` (stream-json of a one-line answer); when the workspace holds `race`,
/// it first rewrites `.gemini/settings.json`, as another conversation's call could between
/// superpi's check and the program's read.
const STAND_IN: &str = r#"#!/bin/sh
case "$1" in --version) echo 0.61.0; exit 0;; esac
cat > /dev/null
[ -e race ] && printf ' ' >> .gemini/settings.json
printf '%s\n' '{"type":"init","session_id":"s-1","model":"m"}' \
  '{"type":"message","role":"assistant","content":"stand-in answered","delta":true}' \
  '{"type":"result","status":"success","stats":{}}'
"#;

#[test]
fn as_an_ordinary_user_a_gemini_turn_runs_only_beside_its_accepted_folder() {
    let m = Machine::new(Some(NOBODY));
    let program = m.home.join(".local/bin/gemini");
    write(&program, STAND_IN);
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let harnesses = format!("[backends.gemini-cli]\nprogram = \"{}\"\n", program.display());
    write(&m.home.join(".config/superpi/harnesses.toml"), &harnesses);
    let folder = m.workspace.join(".gemini");
    write(&folder.join("settings.json"), r#"{"hooksConfig": {"enabled": false}}"#);
    sh(Command::new("chown").args(["-R", &format!("{NOBODY}:{NOBODY}")]).arg(&folder));
    let turn = || {
        let out = m.superpi(&["run", "--harness", "gemini-cli", "--mode", "auto", "hi"]).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let doctor = || -> Vec<(String, String)> {
        let out = m.superpi(&["doctor", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let files = report["backend_files"].as_array().unwrap();
        files
            .iter()
            .map(|f| (f["path"].as_str().unwrap().to_string(), f["standing"].as_str().unwrap().to_string()))
            .collect()
    };
    let shown = folder.display().to_string();

    let (ok, _, stderr) = turn();
    assert!(!ok && stderr.contains(&shown) && stderr.contains("you have not accepted"), "{stderr}");
    assert!(stderr.contains(&format!("superpi permissions trust {}", m.workspace.display())), "{stderr}");
    assert_eq!(doctor(), [(shown.clone(), "not accepted".to_string())]);

    let trust = m.superpi(&["permissions", "trust"]).output().unwrap();
    let said = String::from_utf8_lossy(&trust.stdout);
    assert!(trust.status.success() && said.contains(&format!("accepted {shown}")), "{said}");
    let (ok, stdout, stderr) = turn();
    assert!(ok && stdout.trim() == "stand-in answered", "{stdout}\n{stderr}");
    assert_eq!(doctor(), [(shown.clone(), "accepted".to_string())]);

    // Rewritten after superpi's check, before the program's first word: the turn is stopped.
    write(&m.workspace.join("race"), "");
    let (ok, stdout, stderr) = turn();
    assert!(!ok && !stdout.contains("stand-in answered"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("changed since you accepted it") && stderr.contains("changed while Gemini CLI started"),
        "{stderr}"
    );
    assert_eq!(doctor(), [(shown.clone(), "changed".to_string())]);
    std::fs::remove_file(m.workspace.join("race")).unwrap();
    let (ok, _, stderr) = turn();
    assert!(!ok && stderr.contains("changed since you accepted it"), "{stderr}");
}

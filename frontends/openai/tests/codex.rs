//! Codex CLI (`codex exec`, from the agent backends' test cache at the version `.ci/run` pins)
//! with a real `superpi gateway` as its model provider over the Responses API, on the mock
//! model, offline: the provider entry is the README's (`<!-- check: codex-provider -->`).
//! Skipped, saying so, when Codex is not installed there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // a test runs codex

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::Gateway;
use superpi_backends::BackendKind;
use superpi_client::KernelClient;
use superpi_client::principal::principal_for_token;
use superpi_proto::EntryKind;

/// The README's Codex provider entry, pointing at `base`.
fn provider_entry(base: &str) -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let (_, rest) = readme.split_once("<!-- check: codex-provider -->\n```toml\n").expect("the README's Codex snippet");
    let (snippet, _) = rest.split_once("\n```").unwrap();
    assert!(snippet.contains("http://127.0.0.1:4000/v1"), "{snippet}");
    snippet.replace("http://127.0.0.1:4000", base)
}

/// Runs `codex ARGS` in `cwd` with `home` as its home (and Codex's), nothing of the user's, and
/// the gateway's token as the provider's key; returns (success, stdout, stderr).
fn codex(program: &Path, home: &Path, cwd: &Path, token: &str, args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CODEX_HOME", home.join(".codex"))
        .env("SUPERPI_GATEWAY_TOKEN", token)
        .stdin(Stdio::null());
    let out = cmd.output().expect("run codex");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), stdout.into_owned(), stderr.into_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_exec_takes_the_gateway_as_its_model() {
    let Some(program) = superpi_backends::discover::test_install(BackendKind::Codex) else {
        eprintln!("SKIPPED: Codex is not installed in the test cache (.ci/run installs it)");
        return;
    };
    let gw = Gateway::start(&[], &[("SUPERPI_GATEWAY_TOKEN", "codex-key")]);
    std::fs::write(gw.env.workspace.join("marker.txt"), "x").unwrap();
    // Codex's own home and the directory it runs in, beside (not in) the gateway's workspace.
    let (home, project) = (gw.env.path().join("codex-home"), gw.env.path().join("codex-project"));
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(home.join(".codex/config.toml"), provider_entry(&gw.base)).unwrap();

    let run = |token: &'static str, args: Vec<&'static str>| {
        let (program, home, project) = (program.clone(), home.clone(), project.clone());
        tokio::task::spawn_blocking(move || codex(&program, &home, &project, token, &args))
    };
    // The agent's tool runs in the gateway's workspace, not where Codex runs; Codex prints the
    // agent's last message.
    let (ok, stdout, stderr) =
        run("codex-key", vec!["exec", "--skip-git-repo-check", "@tool ls {\"path\": \".\"}"]).await.unwrap();
    assert!(ok, "codex exec failed:\n{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "The tools answered. ls returned: marker.txt", "{stderr}");
    // It showed the agent's tool activity (the reasoning items) on its way.
    assert!(stderr.contains("[tool] ls"), "{stderr}");

    // The next prompt of Codex's thread (its `session-id`) continues the same conversation.
    let (ok, stdout, stderr) =
        run("codex-key", vec!["exec", "--skip-git-repo-check", "resume", "--last", "the second prompt"]).await.unwrap();
    assert!(ok, "codex exec resume failed:\n{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "the second prompt", "only the new prompt reached the agent: {stderr}");
    // One conversation of the token's principal holds both prompts.
    let mut options = gw.env.connect_options("test");
    options.principal = principal_for_token("codex-key");
    options.remote = true;
    let client = KernelClient::connect(&options).await.unwrap();
    let conversations = client.list().await.unwrap();
    let [conversation] = conversations.as_slice() else { panic!("{conversations:?}") };
    let conversation = conversation.clone();
    let history = client.history(conversation.conversation_id).await.unwrap();
    let prompts = history.entries.iter().filter(|e| e.kind == EntryKind::User).count();
    assert_eq!(prompts, 2, "{:?}", history.entries);

    // A failed turn fails Codex with the turn's error, and is not run again: the snippet turns
    // Codex's retries off (by default it would send the request five more times).
    let (ok, stdout, stderr) =
        run("codex-key", vec!["exec", "--skip-git-repo-check", "@fail the model broke"]).await.unwrap();
    assert!(!ok, "{stdout}\n{stderr}");
    assert!(stderr.contains("the model broke"), "{stderr}");
    assert!(!stderr.contains("Reconnecting"), "{stderr}");
    let conversations = client.list().await.unwrap();
    let failed = conversations.iter().find(|c| c.conversation_id != conversation.conversation_id).expect("its thread");
    let history = client.history(failed.conversation_id).await.unwrap();
    assert_eq!(history.entries.iter().filter(|e| e.kind == EntryKind::User).count(), 1, "the failed turn ran again");

    // A wrong key is refused; Codex says so and fails.
    let (ok, stdout, stderr) = run("not-the-key", vec!["exec", "--skip-git-repo-check", "hello"]).await.unwrap();
    assert!(!ok, "{stdout}\n{stderr}");
    assert!(stderr.contains("invalid_api_key") || stderr.contains("401"), "{stderr}");
}

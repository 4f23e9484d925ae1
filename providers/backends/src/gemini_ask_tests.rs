#![allow(clippy::disallowed_methods)] // the test runs the hook as the CLI would

use std::process::Stdio;

use serde_json::json;

use super::*;
use crate::gemini::{ASK_DIR_VAR, ASK_HOOK};

/// The hook as Gemini CLI runs it (`sh -c`, the call on stdin), with the turn's directory.
fn hook(dir: Option<&Path>, call: &Value) -> tokio::process::Child {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.args(["-c", ASK_HOOK]).stdin(Stdio::piped()).stdout(Stdio::piped()).env_remove(ASK_DIR_VAR);
    if let Some(dir) = dir {
        cmd.env(ASK_DIR_VAR, dir);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let call = call.to_string();
    tokio::spawn(async move { tokio::io::AsyncWriteExt::write_all(&mut stdin, call.as_bytes()).await });
    child
}

async fn printed(child: tokio::process::Child) -> String {
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn the_hook_hands_the_call_to_superpi_and_prints_its_answer() {
    let home = tempfile::tempdir().unwrap();
    let mut asks = Asks::create(home.path()).unwrap();
    let call = json!({"tool_name": "run_shell_command", "tool_input": {"command": "echo hi"}});
    // A line the confined program forged (no question of this turn) is skipped.
    std::fs::write(asks.dir().join("requests"), "/etc\n").unwrap();
    let child = hook(Some(asks.dir()), &call);
    let (id, request) = asks.next().await.unwrap();
    assert_eq!(request, call);
    answer(asks.dir(), &id, &Approval::Allow).unwrap();
    assert_eq!(printed(child).await, "{\"decision\":\"allow\"}\n");
    assert!(!Path::new(&id).exists(), "an answered question is removed");

    let child = hook(Some(asks.dir()), &call);
    let (id, _) = asks.next().await.unwrap();
    answer(asks.dir(), &id, &Approval::Deny { message: "no".into() }).unwrap();
    let refused: Value = serde_json::from_str(&printed(child).await).unwrap();
    assert_eq!(refused, json!({"decision": "deny", "reason": "no"}));
    assert!(answer(asks.dir(), "/etc", &Approval::Allow).is_err(), "only a question of the turn is answered");

    let dir = asks.dir().to_path_buf();
    drop(asks);
    assert!(!dir.exists(), "the turn's questions go with it");
}

#[tokio::test]
async fn without_the_turns_directory_the_hook_lets_the_call_run_and_unable_to_ask_it_refuses() {
    let call = json!({"tool_name": "run_shell_command", "tool_input": {"command": "true"}});
    assert_eq!(printed(hook(None, &call)).await, "", "no question in auto");
    let missing = tempfile::tempdir().unwrap().path().join("gone");
    let refused: Value = serde_json::from_str(&printed(hook(Some(&missing), &call)).await).unwrap();
    assert_eq!(refused["decision"], "deny", "{refused}");
}

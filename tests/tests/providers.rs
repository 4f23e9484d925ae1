//! End to end: `superpi run --model gpt-4o-mini` against a local server that replays a
//! recorded OpenAI stream, checking the answer and what was sent.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use superpi_providers::testing::{ReplayServer, Reply, recorded};
use superpi_tests::TestEnv;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_an_openai_compatible_server_streams_its_answer() {
    let server = ReplayServer::start(vec![Reply::stream(&recorded("openai_text.sse").unwrap(), 7)]).await.unwrap();
    let env = TestEnv::new();
    let mut cmd = env.command(&["run", "--model", "gpt-4o-mini", "hi"]);
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.base)).env("OPENAI_API_KEY", "sk-test-key");
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.trim(), "Hello there, wörld ✓");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("mock"));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json().unwrap();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["stream"], true);
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test-key"));
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "hi");
    assert!(body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "bash")));
}

#[test]
fn a_model_without_credentials_is_an_error_naming_what_is_missing() {
    let env = TestEnv::new();
    let out = env.command(&["run", "--model", "claude-sonnet-4", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    let out = env.command(&["run", "--model", "no-such-model-xyz", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-model-xyz"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_command_supplies_the_bearer_token() {
    let server = ReplayServer::start(vec![Reply::stream(&recorded("openai_text.sse").unwrap(), 64)]).await.unwrap();
    let env = TestEnv::new();
    let script = env.path().join("token.sh");
    std::fs::write(&script, "#!/bin/sh\necho short-lived-token-42\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut cmd = env.command(&["run", "--model", "gpt-4o-mini", "hi"]);
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.base)).env("SUPERPI_OPENAI_AUTH_COMMAND", &script);
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer short-lived-token-42"));
}

//! Agent backends behind ACP, driven by the official TypeScript client SDK
//! (`@agentclientprotocol/sdk`, pinned by tests/sdk/package-lock.json and installed there when
//! missing): tests/sdk/backend_turn.mjs runs one turn of a backend harness through `superpi acp`
//! against a local fake of the backend's model API. Node and npm are required; the backend's
//! program comes from the backends' test cache (skipped, saying so, when it is not there).
//! The model's questions go to the same client as `elicitation/create` forms, on the mock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // a test runs node

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use superpi_backends::BackendKind;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{FakeServer, GeminiFake, OpenAiFake, ResponsesFake};
use superpi_tests::TestEnv;

/// The SDK's directory, its packages installed from the lock when missing.
fn sdk_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    if !dir.join("node_modules/@agentclientprotocol/sdk").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .expect("npm is required for this test (Node 20 or later)");
        assert!(status.success(), "npm ci failed in {}", dir.display());
    }
    dir
}

/// One turn of `harness` in `mode` through `superpi acp` (on `fake`'s vendor, or the mock),
/// the SDK answering questions with `permission` and forms with `ANSWERS`: what the client
/// saw (`stopReason`, `updates`, `asked`, `elicited`).
async fn sdk_turn(
    env: &TestEnv,
    fake: Option<&FakeServer>,
    vars: &[(&str, &str)],
    harness: &str,
    mode: &str,
    prompt: &str,
) -> Value {
    let dir = sdk_dir();
    let mut cmd = Command::new("node");
    cmd.arg(dir.join("backend_turn.mjs")).current_dir(&dir);
    env.apply_env(&mut cmd);
    cmd.envs(fake.map(FakeServer::env).unwrap_or_default()).envs(vars.iter().copied());
    let acp = format!("'{}' acp", superpi_tests::superpi_bin().display());
    cmd.env("ACP_COMMAND", acp)
        .env("WORKSPACE", &env.workspace)
        .env("HARNESS", harness)
        .env("MODE", mode)
        .env("PROMPT", prompt);
    let out = tokio::process::Command::from(cmd).output().await.expect("node is required for this test");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the SDK's turn failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

fn agent_text(seen: &Value) -> String {
    let updates = seen["updates"].as_array().unwrap();
    let chunks = updates.iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk");
    chunks.filter_map(|u| u["content"]["text"].as_str()).collect()
}

/// Gemini CLI behind ACP: the editor's session names the gemini-cli harness in
/// `accept-edits` (an ACP session's ceiling). The CLI writes a file itself without a question
/// (an edit), and its shell command is asked of the editor (`session/request_permission`,
/// through superpi's hook in the CLI) and runs once allowed, confined by superpi; the editor
/// sees both calls, their completion and the answer, with the turn's stop reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_cli_turn_asks_the_official_acp_client_before_its_command() {
    let Some(env) = backend_env(BackendKind::GeminiCli) else { return };
    let marker = env.workspace.join("marker.txt").display().to_string();
    let command = "echo from-the-shell > shell.txt";
    let fake = GeminiFake::start(vec![
        Answer::tool_call("write_file", json!({"file_path": marker, "content": "from-acp"})),
        Answer::tool_call("run_shell_command", json!({"command": command})),
        Answer::text("marker written"),
    ])
    .await
    .unwrap();
    // The CLI's model named (else it first asks a small model to route the prompt).
    let vars = [("GEMINI_MODEL", "gemini-2.5-flash")];
    let seen = sdk_turn(&env, Some(&fake), &vars, "gemini-cli", "accept-edits", "write the marker").await;
    assert_eq!(seen["stopReason"], "end_turn", "{seen}");
    assert_eq!(agent_text(&seen), "marker written", "{seen}");
    let updates = seen["updates"].as_array().unwrap();
    let calls: Vec<&Value> = updates.iter().filter(|u| u["sessionUpdate"] == "tool_call").collect();
    assert_eq!(calls.len(), 2, "{seen}");
    assert!(calls[0].to_string().contains("marker.txt") && calls[1].to_string().contains(command), "{seen}");
    for call in &calls {
        let id = &call["toolCallId"];
        let completed = updates
            .iter()
            .any(|u| u["sessionUpdate"] == "tool_call_update" && &u["toolCallId"] == id && u["status"] == "completed");
        assert!(completed, "{seen}");
    }
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "only the command is asked: {seen}");
    assert!(asked[0].to_string().contains(command), "{seen}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], calls[1]["toolCallId"], "the question is about the shown call");
    assert_eq!(std::fs::read_to_string(env.workspace.join("marker.txt")).unwrap(), "from-acp");
    assert_eq!(std::fs::read_to_string(env.workspace.join("shell.txt")).unwrap(), "from-the-shell\n");
    let requests = fake.requests();
    assert!(requests.iter().all(|r| r.path.starts_with("/v1beta/models/gemini-2.5-flash:")), "{requests:?}");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// A test environment whose harnesses file names `kind`'s program from the test cache; `None`,
/// saying so, when it is not installed.
fn backend_env(kind: BackendKind) -> Option<TestEnv> {
    let Some(program) = superpi_backends::discover::test_install(kind) else {
        eprintln!("SKIPPED: {} is not installed in the test cache (.ci/run installs it)", kind.title());
        return None;
    };
    let env = TestEnv::new();
    let file = format!("[backends.{kind}]\nprogram = \"{}\"\n", program.display());
    std::fs::write(env.locations.config_dir.join("harnesses.toml"), file).unwrap();
    Some(env)
}

/// What the editor saw of a turn whose one command (containing `command`) was asked, allowed
/// and run: the question, the call and its completion, the answer `marker written`.
fn assert_asked_and_ran(seen: &Value, command: &str) {
    assert_eq!(seen["stopReason"], "end_turn", "{seen}");
    assert_eq!(agent_text(seen), "marker written", "{seen}");
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    assert!(asked[0].to_string().contains(command), "{seen}");
    let updates = seen["updates"].as_array().unwrap();
    let call = updates.iter().find(|u| u["sessionUpdate"] == "tool_call").unwrap_or_else(|| panic!("{seen}"));
    let id = &call["toolCallId"];
    let completed = updates
        .iter()
        .any(|u| u["sessionUpdate"] == "tool_call_update" && &u["toolCallId"] == id && u["status"] == "completed");
    assert!(completed, "{seen}");
}

/// OpenCode behind ACP: in `accept-edits` OpenCode asks before its shell command; the question
/// reaches the editor as `session/request_permission`, the editor allows it, the command runs
/// (confined by superpi) and the editor sees the call, its completion and the answer. OpenCode's
/// model is superpi's default (the OpenAI-compatible fake).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opencode_turn_asks_the_official_acp_client_and_runs_its_command() {
    let Some(env) = backend_env(BackendKind::Opencode) else { return };
    let command = "echo from-acp > marker.txt";
    let fake = OpenAiFake::start(vec![
        Answer::tool_call("bash", json!({"command": command, "description": "write a marker"})),
        Answer::text("marker written"),
    ])
    .await
    .unwrap();
    let seen = sdk_turn(&env, Some(&fake), &[], "opencode", "accept-edits", "write the marker").await;
    assert_asked_and_ran(&seen, command);
    assert_eq!(std::fs::read_to_string(env.workspace.join("marker.txt")).unwrap(), "from-acp\n");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// Codex behind ACP: in `accept-edits` (Codex's approval policy `untrusted`) Codex asks
/// before its command; the question reaches the editor as `session/request_permission`, the
/// editor allows it, the command runs (confined by superpi) and the editor sees the call, its
/// completion and the answer. The editor chooses the model (`session/set_config_option`):
/// Codex 0.171.0's own default sends an `additional_tools` input item, which is not among the
/// Responses API's documented input types the fake checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_turn_asks_the_official_acp_client_and_runs_its_command() {
    let Some(env) = backend_env(BackendKind::Codex) else { return };
    let command = "echo from-acp > marker.txt";
    let fake = ResponsesFake::start(vec![
        Answer::tool_call("exec_command", json!({"cmd": command})),
        Answer::text("marker written"),
    ])
    .await
    .unwrap();
    let vars = [("MODEL", "openai/gpt-5.1-codex")];
    let seen = sdk_turn(&env, Some(&fake), &vars, "codex", "accept-edits", "write the marker").await;
    // Codex's question names the command as it will run it (through a shell).
    assert_asked_and_ran(&seen, "from-acp");
    assert_eq!(std::fs::read_to_string(env.workspace.join("marker.txt")).unwrap(), "from-acp\n");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    assert!(fake.accepted().iter().all(|body| body["model"] == "gpt-5.1-codex"), "the editor's model");
}

/// The model's question (`ask_question`) reaches an editor that declared forms as an
/// `elicitation/create` form tied to the call, and its answer is the call's result; an
/// editor without forms is not asked, and the model reads why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_elicited_from_the_official_acp_client_that_takes_forms() {
    let env = TestEnv::new();
    let ask = json!({"questions": [{"id": "db", "question": "Which database?", "options": ["sqlite", "postgres"]}]});
    let prompt = format!("@tool ask_question {ask}");
    let answers = [("ANSWERS", r#"{"db": "postgres"}"#)];
    let seen = sdk_turn(&env, None, &answers, "superpi-code", "accept-edits", &prompt).await;
    assert_eq!(seen["stopReason"], "end_turn", "{seen}");
    let form = &seen["elicited"][0];
    assert_eq!(form["mode"], "form", "{seen}");
    assert_eq!(form["message"], "Which database?");
    assert_eq!(form["requestedSchema"]["properties"]["db"]["enum"], json!(["sqlite", "postgres"]));
    let call = form["toolCallId"].as_str().unwrap();
    let done = tool_update(&seen, call, "completed");
    assert!(done.to_string().contains(r#"{\"db\":\"postgres\"}"#), "{done}");
    assert!(seen["asked"].as_array().unwrap().is_empty(), "no permission question: {seen}");

    let seen = sdk_turn(&env, None, &[], "superpi-code", "accept-edits", &prompt).await;
    assert!(seen["elicited"].as_array().unwrap().is_empty(), "{seen}");
    let failed = seen["updates"].as_array().unwrap().iter().find(|u| u["status"] == "failed").expect("a failed call");
    assert!(failed.to_string().contains("did not declare ACP elicitation"), "{failed}");
}

/// The last update of tool call `id` with `status`.
fn tool_update<'a>(seen: &'a Value, id: &str, status: &str) -> &'a Value {
    let updates = seen["updates"].as_array().unwrap();
    updates.iter().rfind(|u| u["toolCallId"] == id && u["status"] == status).unwrap_or_else(|| panic!("{seen}"))
}

/// An HTTP MCP server that wants an OAuth login (the tests' local authorization server and
/// protected server), met by a turn of an editor that declared URL elicitation: the login's
/// URL reaches the official client as a URL-mode `elicitation/create`, the client (playing
/// the browser) follows it back to the kernel's loopback redirect, the tokens are stored, and
/// the same turn calls the server's tool; `elicitation/complete` follows. An editor without
/// URL elicitation is not asked: the notice and the call's result say `superpi mcp login`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_login_goes_through_the_editors_url_elicitation() {
    use superpi_tests::oauth_fake::{OAuthFake, OAuthOptions};
    let fake = OAuthFake::start(OAuthOptions::default());
    let env = TestEnv::new();
    let settings = json!({"mcp_servers": {"prot": {"url": fake.mcp_url()}}});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    let prompt = "@tool mcp__prot__whoami {}";

    let seen = sdk_turn(&env, None, &[], "superpi-code", "accept-edits", prompt).await;
    assert!(seen["elicited"].as_array().unwrap().is_empty(), "{seen}");
    let failed = seen["updates"].as_array().unwrap().iter().find(|u| u["status"] == "failed").expect("a failed call");
    assert!(failed.to_string().contains("run `superpi mcp login prot`"), "{failed}");
    assert!(!env.locations.data_dir.join("mcp-oauth/prot.json").exists());

    let seen = sdk_turn(&env, None, &[("URLS", "1")], "superpi-code", "accept-edits", prompt).await;
    let log = std::fs::read_to_string(env.locations.kernel_log_path()).unwrap_or_default();
    assert_eq!(seen["stopReason"], "end_turn", "{seen}\nKERNEL LOG:\n{log}");
    let asked = &seen["elicited"][0];
    assert_eq!(asked["mode"], "url", "{seen}");
    let url = asked["url"].as_str().unwrap();
    assert!(url.starts_with(&fake.base) && url.contains("code_challenge_method=S256"), "{url}");
    assert_eq!(seen["completed"][0]["elicitationId"], asked["elicitationId"], "{seen}");
    let done = seen["updates"].as_array().unwrap().iter().rfind(|u| u["status"] == "completed").expect("a call");
    assert!(done.to_string().contains("token of client-1"), "{done}");
    let seen_by_fake = fake.seen();
    assert!(seen_by_fake.contains(&"token authorization_code".to_string()), "{seen_by_fake:?}");
    let tokens = env.locations.data_dir.join("mcp-oauth/prot.json");
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&tokens).unwrap_or_else(|e| panic!("{}: {e}", tokens.display()));
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
}

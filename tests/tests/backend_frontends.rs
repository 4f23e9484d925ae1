//! An agent backend behind the frontends that `tests/backends.rs` and the ACP and MCP tests do
//! not drive: the OpenAI-compatible gateway (`model` = the harness id), AG-UI
//! (`forwardedProps.harness`), JSON-RPC over stdio (`session.open` with the harness, a
//! question answered with `ui.respond`) and the terminal's line-by-line `superpi chat`. Each runs a real Claude Code turn with a tool call
//! against the Anthropic fake; the frontends know nothing of backends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use superpi_backends::BackendKind;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer};
use superpi_tests::TestEnv;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long a turn may take.
const LIMIT: Duration = Duration::from_secs(120);

/// An environment whose harnesses file names Claude Code from the test cache; `None`, saying
/// so, when Claude Code is not installed.
fn claude_env() -> Option<TestEnv> {
    let Some(program) = superpi_backends::discover::test_install(BackendKind::ClaudeCode) else {
        eprintln!("SKIPPED: Claude Code is not installed in the test cache (.ci/run installs it)");
        return None;
    };
    let env = TestEnv::new();
    let names = format!("[backends.claude-code]\nprogram = \"{}\"\n", program.display());
    std::fs::write(env.locations.config_dir.join("harnesses.toml"), names).unwrap();
    Some(env)
}

/// The Anthropic fake answering with `first` (a tool call), then `answer`, with Claude Code's
/// betas accepted.
async fn anthropic(first: Answer, answer: &str) -> FakeServer {
    let fake = AnthropicFake::start(vec![first, Answer::text(answer)]).await.unwrap();
    fake.accept_betas();
    fake
}

/// A `Write` of `file` in the workspace: Claude Code runs it without asking in `accept-edits`.
fn write(env: &TestEnv, file: &str) -> Answer {
    let path = env.workspace.join(file).display().to_string();
    Answer::tool_call("Write", json!({"file_path": path, "content": "from a frontend"}))
}

fn vars(fake: &FakeServer) -> Vec<(String, String)> {
    fake.env()
}

fn borrowed(vars: &[(String, String)]) -> Vec<(&str, &str)> {
    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

/// POSTs `body` as JSON; the answer's status and text.
async fn post(url: String, body: &Value) -> (u16, String) {
    let resp = http().post(url).header("content-type", "application/json").body(body.to_string()).send().await;
    let resp = resp.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// The gateway: `model: "claude-code"` selects the backend's harness; the completion is
/// Claude Code's answer after it wrote the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_runs_a_claude_code_turn_named_by_its_harness_id() {
    let Some(env) = claude_env() else { return };
    let fake = anthropic(write(&env, "from-gateway.txt"), "written through the gateway").await;
    let vars = vars(&fake);
    let (_gateway, base) = env.spawn_http(&["gateway", "--port", "0"], &borrowed(&vars));
    let body = json!({
        "model": "claude-code",
        "messages": [{"role": "user", "content": "write the file"}],
        "execution_mode": "accept-edits",
    });
    let (status, text) = post(format!("{base}/v1/chat/completions"), &body).await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["model"], "claude-code", "{answer}");
    assert_eq!(answer["choices"][0]["message"]["content"], "written through the gateway", "{answer}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("from-gateway.txt")).unwrap(), "from a frontend");
    assert_eq!(fake.accepted().len(), 2, "Claude Code asked its model twice: {:?}", fake.rejections());
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// AG-UI: `forwardedProps.harness` names the backend; the run streams Claude Code's tool call
/// (its name and arguments), its result and the answer, and finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agui_runs_a_claude_code_turn_named_in_forwarded_props() {
    let Some(env) = claude_env() else { return };
    let fake = anthropic(write(&env, "from-agui.txt"), "written through AG-UI").await;
    let vars = vars(&fake);
    let (_agui, base) = env.spawn_http(&["agui", "--port", "0"], &borrowed(&vars));
    let input = json!({
        "threadId": "t-claude",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "write the file"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {"harness": "claude-code", "executionMode": "accept-edits"},
    });
    // The run's stream ends with the run.
    let (status, body) = post(format!("{base}/agui/v1/run"), &input).await;
    assert_eq!(status, 200, "{body}");
    let events: Vec<Value> = body
        .split("\n\n")
        .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}")))
        .collect();
    let of = |ty: &str| events.iter().filter(|e| e["type"] == ty).cloned().collect::<Vec<_>>();
    let started = of("TOOL_CALL_START");
    assert_eq!(started.len(), 1, "{body}");
    assert_eq!(started[0]["toolCallName"], "Write", "{body}");
    let args: String = of("TOOL_CALL_ARGS").iter().filter_map(|e| e["delta"].as_str()).collect();
    assert!(args.contains("from-agui.txt"), "{body}");
    assert_eq!(of("TOOL_CALL_RESULT").len(), 1, "{body}");
    let text: String = of("TEXT_MESSAGE_CONTENT").iter().filter_map(|e| e["delta"].as_str()).collect();
    assert!(text.ends_with("written through AG-UI"), "{body}");
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{body}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("from-agui.txt")).unwrap(), "from a frontend");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// JSON-RPC over stdio: `session.open` names the backend; in `accept-edits` Claude Code asks
/// before its command, the question reaches the interactive watch as a `permission_request`,
/// `ui.respond` allows it, the command runs and the turn completes with Claude Code's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_runs_a_claude_code_turn_whose_question_is_answered_with_ui_respond() {
    let Some(env) = claude_env() else { return };
    // Not an `echo` into a file: Claude Code's acceptEdits runs that as an edit, unasked.
    let command = "/usr/bin/python3 -c \"open('from-rpc.txt','w').write('yes')\"";
    let bash = Answer::tool_call("Bash", json!({"command": command, "description": "write a marker"}));
    let fake = anthropic(bash, "ran it through RPC").await;
    let mut cmd = tokio::process::Command::from(env.command(&["rpc", "--stdio"]));
    cmd.envs(fake.env()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_id = 0;
    let mut send = async |stdin: &mut tokio::process::ChildStdin, method: &str, params: Value| {
        next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}).to_string() + "\n";
        stdin.write_all(line.as_bytes()).await.unwrap();
        next_id
    };
    let read = async |lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>| -> Value {
        let line = tokio::time::timeout(LIMIT, lines.next_line()).await.expect("a line in time").unwrap();
        serde_json::from_str(&line.expect("the server is still there")).unwrap()
    };
    // The conversation's workspace is the server's directory, the test's workspace.
    let open = json!({"harness": "claude-code", "mode": "accept-edits"});
    let id = send(&mut stdin, "session.open", open).await;
    let opened = read(&mut lines).await;
    assert_eq!(opened["id"], id, "{opened}");
    let conversation = opened["result"]["conversation_id"].as_i64().unwrap_or_else(|| panic!("{opened}"));
    send(&mut stdin, "session.watch", json!({"conversation_id": conversation, "interactive": true})).await;
    let watching = read(&mut lines).await;
    let watch = watching["result"]["watch"].as_u64().unwrap_or_else(|| panic!("{watching}"));
    let prompt = json!({"conversation_id": conversation, "content": [{"type": "text", "text": "write the marker"}]});
    send(&mut stdin, "session.submit", prompt).await;

    let mut asked = Vec::new();
    let end = loop {
        let line = read(&mut lines).await;
        if line["method"] != "session.event" || line["params"]["watch"] != watch {
            continue;
        }
        let ack = json!({"jsonrpc": "2.0", "method": "session.ack", "params": {"watch": watch, "batch": line["params"]["batch"]}});
        stdin.write_all((ack.to_string() + "\n").as_bytes()).await.unwrap();
        let mut ended = None;
        for event in line["params"]["events"].as_array().unwrap() {
            if event["type"] == "permission_request" {
                asked.push(event.clone());
                let answer = json!({"request_id": event["request_id"], "option_id": "allow_once"});
                send(&mut stdin, "ui.respond", answer).await;
            }
            if matches!(event["type"].as_str(), Some("turn_completed" | "turn_error" | "turn_cancelled")) {
                ended = Some(event.clone());
            }
        }
        if let Some(end) = ended {
            break end;
        }
    };
    assert_eq!(end["type"], "turn_completed", "{end}");
    assert_eq!(end["result"], "ran it through RPC", "{end}");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["arguments"]["command"], command, "{asked:?}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("from-rpc.txt")).unwrap(), "yes");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// The terminal's `superpi chat --harness claude-code`: a line is a Claude Code turn (its tool
/// call shown on stderr, its answer on stdout), `/exit` leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_runs_a_claude_code_turn_per_line() {
    let Some(env) = claude_env() else { return };
    let fake = anthropic(write(&env, "from-chat.txt"), "written through chat").await;
    let mut cmd =
        tokio::process::Command::from(env.command(&["chat", "--harness", "claude-code", "--mode", "accept-edits"]));
    cmd.envs(fake.env()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"write the file\n/exit\n").await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(LIMIT, child.wait_with_output()).await.expect("chat ended in time").unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "written through chat", "{stderr}");
    assert!(stderr.contains("Write") && stderr.contains("from-chat.txt"), "the tool call is shown: {stderr}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("from-chat.txt")).unwrap(), "from a frontend");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

//! The frontends' own binary: `superpi acp` and `superpi mcp` become `superpi-frontend` (the
//! same process, by exec) and serve; `superpi-frontend` started directly autostarts the full
//! `superpi` as its kernel, whose confined tools run; `SUPERPI_FRONTEND_EXEC=0` keeps the role
//! in `superpi`.
//!
//! Build both binaries first: `cargo build -p superpi-cli`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use superpi_tests::{TestEnv, frontend_bin, superpi_bin};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A stdio frontend process and its JSON-RPC lines.
struct Stdio2 {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Stdio2 {
    fn spawn(mut cmd: std::process::Command) -> Self {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = Command::from(cmd).kill_on_drop(true).spawn().expect("spawn the frontend");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Stdio2 { child, stdin, lines }
    }

    async fn send(&mut self, message: Value) {
        self.stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(READ_TIMEOUT, self.lines.next_line())
            .await
            .expect("the frontend answered in time")
            .unwrap()
            .expect("the frontend closed stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    /// Sends a request and returns its answer's result, handing every message before it to
    /// `other` (notifications, and requests from the agent, which it may answer).
    async fn call(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        mut other: impl FnMut(&Value) -> Option<Value>,
    ) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let message = self.next().await;
            if message.get("method").is_none() && message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
            if let Some(reply) = other(&message) {
                self.send(reply).await;
            }
        }
    }

    /// The program this process runs now.
    fn exe(&self) -> PathBuf {
        std::fs::read_link(format!("/proc/{}/exe", self.child.id().unwrap())).unwrap()
    }
}

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
            "superpi {role} (a superpi-frontend older than superpi is not used: build both, `cargo build -p superpi-cli`)"
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
        .call(2, "session/prompt", prompt, |message| {
            if message["method"] == json!("session/request_permission") {
                return Some(json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}));
            }
            let update = &message["params"]["update"];
            if update["sessionUpdate"] == json!("agent_message_chunk") {
                text.push_str(update["content"]["text"].as_str().unwrap_or(""));
            }
            None
        })
        .await;
    assert_eq!(done["stopReason"], json!("end_turn"), "{done}");
    assert!(text.contains("read through the frontend's kernel"), "the tool's result is quoted: {text:?}");
}

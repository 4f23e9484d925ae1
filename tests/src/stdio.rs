//! A stdio frontend (`superpi acp`, `superpi mcp`) driven by hand-written JSON-RPC lines: the
//! tests that check the wire itself, not an SDK's view of it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A stdio frontend process and its JSON-RPC lines.
pub struct Stdio2 {
    pub child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Stdio2 {
    pub fn spawn(mut cmd: std::process::Command) -> Self {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = Command::from(cmd).kill_on_drop(true).spawn().expect("spawn the frontend");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Stdio2 { child, stdin, lines }
    }

    pub async fn send(&mut self, message: Value) {
        self.stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(READ_TIMEOUT, self.lines.next_line())
            .await
            .expect("the frontend answered in time")
            .unwrap()
            .expect("the frontend closed stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    /// Sends a request and returns its answer's result, handing every message before it to
    /// `other` (notifications, and requests from the agent, which it may answer).
    pub async fn call(
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

    /// An ACP `session/prompt` whose permission requests are allowed once; every session
    /// update goes to `each`. Returns the prompt's result.
    pub async fn prompt_allowing(&mut self, id: u64, params: Value, mut each: impl FnMut(&Value)) -> Value {
        self.call(id, "session/prompt", params, |message| {
            if message["method"] == json!("session/request_permission") {
                return Some(json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}));
            }
            each(&message["params"]["update"]);
            None
        })
        .await
    }

    /// The program this process runs now.
    pub fn exe(&self) -> PathBuf {
        std::fs::read_link(format!("/proc/{}/exe", self.child.id().unwrap())).unwrap()
    }
}

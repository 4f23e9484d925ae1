//! The user's hooks (settings `hooks`, superpi-policy's `HookSettings`), run at four points:
//! `before_tool` and `after_tool` by the tool-call pipeline (so every tool, built-in, the
//! kernel's own or an MCP server's, passes them, for a turn and for `tool.call`),
//! `before_request` before each model request of a turn, `after_turn` once a turn's end is
//! recorded (model and backend turns).
//!
//! A hook is a shell command line (`/bin/sh -c`) started through the sandbox crate, confined
//! like an MCP server to the conversation's workspace (a fresh empty directory when there is
//! none) without network, given one JSON object on stdin (`hook`, `conversation_id`,
//! `turn_id`, `workspace`, and the point's own fields), within its time limit; it is killed
//! (its process group and cgroup) when the limit passes or the turn is cancelled.
//!
//! A `before_tool` hook answers by its exit code: 0 lets the call go on to the policy, 2
//! refuses it with its stderr (else its stdout) as the reason, which the model reads as the
//! call's result. Any other end (another code, a signal, the time limit, a hook that does not
//! start) refuses the call too, saying the hook failed, with a warning notice: a check that
//! cannot say fails closed, as a question nobody answers does. The other points only observe:
//! anything but exit 0 is a warning notice and the turn goes on.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use superpi_policy::{Hook, HookPoint, HookSettings};
use superpi_proto::Event;
use superpi_sandbox::{ServerProcess, ServerSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::turn::recovery::TurnEnd;

/// The exit code by which a `before_tool` hook refuses the call.
pub(crate) const REFUSE_CODE: i32 = 2;
/// Bytes of a hook's stdout and of its stderr kept (the rest is read and dropped).
const MAX_OUTPUT: usize = 16 * 1024;
/// Characters of a reason or an error a hook's output gives.
const MAX_REASON_CHARS: usize = 2000;
/// Characters of a tool's output an `after_tool` hook is given.
const MAX_RESULT_CHARS: usize = 32 * 1024;

/// Where a hook runs: the conversation and turn (none for `tool.call`), and the workspace.
pub(crate) struct Site<'a> {
    pub conv: Option<(&'a Arc<Conversation>, i64)>,
    pub workspace: Option<&'a Path>,
}

impl Site<'_> {
    fn payload(&self, point: HookPoint, fields: Value) -> Value {
        let mut payload = json!({
            "hook": point.as_str(),
            "conversation_id": self.conv.map(|(conv, _)| conv.id),
            "turn_id": self.conv.map(|(_, turn)| turn),
            "workspace": self.workspace.map(|w| w.display().to_string()),
        });
        if let (Some(payload), Value::Object(fields)) = (payload.as_object_mut(), fields) {
            payload.extend(fields);
        }
        payload
    }

    /// Says that a hook did not end well: a warning notice in the turn, else a log line.
    fn warn(&self, kernel: &Kernel, message: String) {
        match self.conv {
            Some((conv, turn_id)) => conv.emit(kernel, Event::notice(conv.id, Some(turn_id), "warning", message)),
            None => tracing::warn!("{message}"),
        }
    }
}

/// A tool call as its hooks see it.
pub(crate) struct SeenCall<'a> {
    pub call_id: &'a str,
    pub name: &'a str,
    pub arguments: &'a Value,
}

impl SeenCall<'_> {
    fn json(&self) -> Value {
        json!({"call_id": self.call_id, "name": self.name, "arguments": self.arguments})
    }
}

/// How one hook ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    /// Exit 0.
    Passed,
    /// Exit 2, with its reason.
    Refused(String),
    /// Anything else, described.
    Failed(String),
}

/// Runs the `before_tool` hooks about this call, in order, until one does not pass: `Some`
/// reason to refuse the call.
pub(crate) async fn before_tool(
    kernel: &Kernel,
    site: &Site<'_>,
    hooks: &HookSettings,
    call: &SeenCall<'_>,
    cancel: &CancellationToken,
) -> Option<String> {
    let hooks = hooks.for_tool(HookPoint::BeforeTool, call.name);
    if hooks.is_empty() {
        return None;
    }
    let payload = site.payload(HookPoint::BeforeTool, json!({"tool": call.json()}));
    for hook in &hooks {
        match run(kernel, hook, HookPoint::BeforeTool, &payload, site.workspace, Some(cancel)).await {
            Outcome::Passed => continue,
            Outcome::Refused(reason) => {
                return Some(format!("the before_tool hook `{}` refused it: {reason}", hook.name));
            }
            Outcome::Failed(why) => {
                let said = format!("the before_tool hook `{}` failed ({why}), so the call is refused", hook.name);
                site.warn(kernel, format!("{said}: `{}`", call.name));
                return Some(said);
            }
        }
    }
    None
}

/// Runs the `after_tool` hooks about this call with its result.
pub(crate) async fn after_tool(
    kernel: &Kernel,
    site: &Site<'_>,
    hooks: &HookSettings,
    call: &SeenCall<'_>,
    result: &superpi_proto::tool::ToolCallResult,
    cancel: &CancellationToken,
) {
    let hooks = hooks.for_tool(HookPoint::AfterTool, call.name);
    if hooks.is_empty() {
        return;
    }
    let output: String = result.output.chars().take(MAX_RESULT_CHARS).collect();
    let fields = json!({"tool": call.json(), "result": {"is_error": result.is_error, "output": output}});
    observe(kernel, site, &hooks, HookPoint::AfterTool, site.payload(HookPoint::AfterTool, fields), Some(cancel)).await;
}

/// Runs the `before_request` hooks before model request `request` (1, 2, ...) of a turn.
pub(crate) async fn before_request(
    kernel: &Kernel,
    conv: &Arc<Conversation>,
    turn_id: i64,
    model: &str,
    request: usize,
    cancel: &CancellationToken,
) {
    let Some(hooks) = hooks_of(conv).map(|h| h.before_request).filter(|h| !h.is_empty()) else { return };
    let workspace = conv.settings().workspace.map(PathBuf::from);
    let site = Site { conv: Some((conv, turn_id)), workspace: workspace.as_deref() };
    let payload = site.payload(HookPoint::BeforeRequest, json!({"model": model, "request": request}));
    observe(kernel, &site, &hooks, HookPoint::BeforeRequest, payload, Some(cancel)).await;
}

/// Runs the `after_turn` hooks in a task of their own (the turn's end is not held up): the
/// payload's `status` is `completed` (with `result`, the answer), `error` (with `error`) or
/// `cancelled`.
pub(crate) fn after_turn(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    ended: &Result<TurnEnd, String>,
) {
    let Some(hooks) = hooks_of(conv).map(|h| h.after_turn).filter(|h| !h.is_empty()) else { return };
    let end = match ended {
        Ok(TurnEnd::Completed { result, stop_reason }) => {
            json!({"status": "completed", "result": result, "stop_reason": stop_reason})
        }
        Ok(TurnEnd::Cancelled) => json!({"status": "cancelled"}),
        Err(why) => json!({"status": "error", "error": why}),
    };
    let (kernel, conv) = (kernel.clone(), conv.clone());
    tokio::spawn(async move {
        let workspace = conv.settings().workspace.map(PathBuf::from);
        let site = Site { conv: Some((&conv, turn_id)), workspace: workspace.as_deref() };
        let payload = site.payload(HookPoint::AfterTurn, end);
        observe(&kernel, &site, &hooks, HookPoint::AfterTurn, payload, None).await;
    });
}

/// The hooks of a conversation's settings (read with its policy: the user's file when the
/// conversation was loaded).
pub(crate) fn hooks_of(conv: &Conversation) -> Option<HookSettings> {
    lock(&conv.policy).as_ref().ok().map(|policy| policy.settings().hooks.clone())
}

/// Runs observing hooks in order; each that does not pass is a warning.
async fn observe(
    kernel: &Kernel,
    site: &Site<'_>,
    hooks: &[Hook],
    point: HookPoint,
    payload: Value,
    cancel: Option<&CancellationToken>,
) {
    for hook in hooks {
        let why = match run(kernel, hook, point, &payload, site.workspace, cancel).await {
            Outcome::Passed => continue,
            Outcome::Refused(said) => format!("exited {REFUSE_CODE}: {said}"),
            Outcome::Failed(why) => why,
        };
        site.warn(kernel, format!("the {} hook `{}` failed ({why}); the turn goes on", point.as_str(), hook.name));
    }
}

/// Runs one hook to its end, its time limit or cancel.
pub(crate) async fn run(
    kernel: &Kernel,
    hook: &Hook,
    point: HookPoint,
    payload: &Value,
    workspace: Option<&Path>,
    cancel: Option<&CancellationToken>,
) -> Outcome {
    // Without a workspace the hook is confined to an empty directory of its own.
    let scratch;
    let workspace = match workspace {
        Some(workspace) => workspace.to_path_buf(),
        None => match tempfile::tempdir() {
            Ok(dir) => {
                scratch = dir;
                scratch.path().to_path_buf()
            }
            Err(err) => return Outcome::Failed(format!("no directory to run it in: {err}")),
        },
    };
    let spec = ServerSpec {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), hook.command.clone()],
        env: vec![("SUPERPI_HOOK".into(), point.as_str().into()), ("SUPERPI_HOOK_NAME".into(), hook.name.clone())],
        cwd: None,
        workspace,
        network: false,
        state_dir: None,
        readable: Vec::new(),
    };
    let ServerProcess { mut stdin, stdout, stderr, mut handle } = match kernel.sandbox.start_server(spec).await {
        Ok(process) => process,
        Err(err) => return Outcome::Failed(format!("it did not start: {err}")),
    };
    let mut input = payload.to_string();
    input.push('\n');
    let work = async {
        let write = async move {
            // A hook need not read its payload: a closed pipe is no failure.
            let _ = stdin.write_all(input.as_bytes()).await;
        };
        let (_, out, err, code) = tokio::join!(write, bounded(stdout), bounded(stderr), handle.exit_code());
        (out, err, code)
    };
    let stopped = async {
        match cancel {
            Some(cancel) => cancel.cancelled().await,
            None => std::future::pending().await,
        }
    };
    // Leaving this function drops `handle`, which kills whatever of the hook still runs.
    let (out, err, code) = tokio::select! {
        ended = tokio::time::timeout(hook.timeout, work) => match ended {
            Ok(ended) => ended,
            Err(_) => return Outcome::Failed(format!("it did not finish within {} s and was stopped", hook.timeout.as_secs())),
        },
        _ = stopped => return Outcome::Failed("the turn was cancelled".into()),
    };
    match code {
        Ok(Some(0)) => Outcome::Passed,
        Ok(Some(REFUSE_CODE)) => Outcome::Refused(said(&err, &out).unwrap_or_else(|| "it gave no reason".into())),
        Ok(Some(code)) => Outcome::Failed(match said(&err, &out) {
            Some(text) => format!("it exited {code}: {text}"),
            None => format!("it exited {code}"),
        }),
        Ok(None) => Outcome::Failed("a signal ended it".into()),
        Err(err) => Outcome::Failed(err),
    }
}

/// What a hook said: its stderr, else its stdout, trimmed and bounded.
fn said(stderr: &[u8], stdout: &[u8]) -> Option<String> {
    [stderr, stdout]
        .into_iter()
        .map(|bytes| String::from_utf8_lossy(bytes).trim().to_string())
        .find(|s| !s.is_empty())
        .map(|text| match text.char_indices().nth(MAX_REASON_CHARS) {
            Some((at, _)) => format!("{}…", &text[..at]),
            None => text,
        })
}

/// A stream read to its end, the first `MAX_OUTPUT` bytes kept.
async fn bounded(mut stream: impl tokio::io::AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = MAX_OUTPUT.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::said;

    #[test]
    fn a_hook_says_its_reason_on_stderr_else_stdout_bounded() {
        assert_eq!(said(b"  no rm here\n", b"ignored"), Some("no rm here".into()));
        assert_eq!(said(b"\n", b"from stdout\n"), Some("from stdout".into()));
        assert_eq!(said(b"", b" "), None);
        let long = "é".repeat(3000);
        let cut = said(long.as_bytes(), b"").unwrap();
        assert_eq!(cut.chars().count(), 2001);
        assert!(cut.ends_with('…'));
    }
}

//! The user's hooks (settings `hooks`, superpi-policy's `HookSettings`), run at five points:
//! `before_tool` and `after_tool` by the tool-call pipeline (so every tool, built-in, the
//! kernel's own or an MCP server's, passes them, for a turn and for `tool.call`),
//! `before_request` before each model request of a turn, `after_turn` once a turn's end is
//! recorded (model and backend turns), `session_start` before the first turn this kernel
//! runs of a conversation.
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
//!
//! A hook that exits 0 may answer one JSON object on stdout (anything else there is ignored):
//! `{"decision": "allow" | "deny" | "ask", "reason": "...", "context": "..."}`, each key
//! optional, and for `before_tool` `"arguments": {...}`: keys whose values replace the call's
//! (the policy then decides the call as rewritten, the next hook sees it so, and its
//! `tool_started` names the keys in `overwritten_keys`). `deny` refuses a `before_tool` call as exit 2 does; `ask` turns a call the policy
//! would allow into a question to the person, through the same path as the policy's questions
//! (nobody to answer: refused). `context` (at most `MAX_CONTEXT_CHARS`, cut beyond) is for the
//! model: a `session_start` hook's joins the system prompt, a tool hook's joins that call's
//! result, fenced as a hook's words; the other points' is ignored.

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
/// Characters of context one hook's answer may add for the model.
pub(crate) const MAX_CONTEXT_CHARS: usize = 4000;
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
    /// Exit 0, with the context its answer adds.
    Passed(Option<String>),
    /// Exit 0 rewriting arguments of the call (`before_tool`), with its context.
    Rewrites(Option<String>, serde_json::Map<String, Value>),
    /// Exit 0 answering `"decision": "ask"`, with its reason and context.
    Asks(String, Option<String>),
    /// Exit 2 (or `"decision": "deny"`), with its reason.
    Refused(String),
    /// Anything else, described.
    Failed(String),
}

/// What a hook's stdout answers, when it is a JSON object.
#[derive(Debug, Default, serde::Deserialize)]
struct Answer {
    decision: Option<String>,
    reason: Option<String>,
    context: Option<String>,
    arguments: Option<serde_json::Map<String, Value>>,
}

/// The outcome of a hook that exited 0, by what its stdout answers.
fn answered(stdout: &[u8]) -> Outcome {
    let answer: Answer = serde_json::from_slice(stdout).unwrap_or_default();
    let bounded = |text: String| match text.char_indices().nth(MAX_CONTEXT_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    };
    let context = answer.context.filter(|c| !c.trim().is_empty()).map(bounded);
    let reason = answer.reason.map(bounded).unwrap_or_else(|| "it gave no reason".into());
    match answer.decision.as_deref() {
        Some("deny") => Outcome::Refused(reason),
        Some("ask") => Outcome::Asks(reason, context),
        _ => match answer.arguments.filter(|a| !a.is_empty()) {
            Some(arguments) => Outcome::Rewrites(context, arguments),
            None => Outcome::Passed(context),
        },
    }
}

/// A hook's context as the model reads it: fenced, named.
pub(crate) fn fenced(hook: &str, context: &str) -> String {
    format!("<hook_context hook=\"{hook}\">\n{}\n</hook_context>", context.replace("</hook_context>", ""))
}

/// Adds a hook's context, fenced, to what its point adds.
fn add(added: &mut String, hook: &str, context: Option<String>) {
    if let Some(context) = context {
        added.push_str("\n\n");
        added.push_str(&fenced(hook, &context));
    }
}

/// What the `before_tool` hooks say of a call.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Verdict {
    /// Refuse it, for this reason.
    pub refused: Option<String>,
    /// Ask the person, for this reason (when the policy would allow it).
    pub ask: Option<String>,
    /// What they add to the call's result.
    pub context: String,
    /// The call's arguments as they rewrote them, and the keys they changed, in order.
    pub rewritten: Option<(Value, Vec<String>)>,
}

/// Runs the `before_tool` hooks about this call, in order, until one refuses it.
pub(crate) async fn before_tool(
    kernel: &Kernel,
    site: &Site<'_>,
    hooks: &HookSettings,
    call: &SeenCall<'_>,
    cancel: &CancellationToken,
) -> Verdict {
    let hooks = hooks.for_tool(HookPoint::BeforeTool, call.name);
    let mut verdict = Verdict::default();
    if hooks.is_empty() {
        return verdict;
    }
    let mut arguments = call.arguments.clone();
    let mut overwritten: Vec<String> = Vec::new();
    for hook in &hooks {
        let seen = SeenCall { arguments: &arguments, ..*call };
        let payload = site.payload(HookPoint::BeforeTool, json!({"tool": seen.json()}));
        match run(kernel, hook, HookPoint::BeforeTool, &payload, site.workspace, Some(cancel)).await {
            Outcome::Passed(context) => add(&mut verdict.context, &hook.name, context),
            Outcome::Rewrites(context, keys) => {
                add(&mut verdict.context, &hook.name, context);
                let Value::Object(args) = &mut arguments else { continue };
                for (key, value) in keys {
                    if args.get(&key) != Some(&value) {
                        if !overwritten.contains(&key) {
                            overwritten.push(key.clone());
                        }
                        args.insert(key, value);
                    }
                }
                if !overwritten.is_empty() {
                    verdict.rewritten = Some((arguments.clone(), overwritten.clone()));
                }
            }
            Outcome::Asks(reason, context) => {
                add(&mut verdict.context, &hook.name, context);
                verdict.ask.get_or_insert(format!("the before_tool hook `{}` asks: {reason}", hook.name));
            }
            Outcome::Refused(reason) => {
                verdict.refused = Some(format!("the before_tool hook `{}` refused it: {reason}", hook.name));
                return verdict;
            }
            Outcome::Failed(why) => {
                let said = format!("the before_tool hook `{}` failed ({why}), so the call is refused", hook.name);
                site.warn(kernel, format!("{said}: `{}`", call.name));
                verdict.refused = Some(said);
                return verdict;
            }
        }
    }
    verdict
}

/// Runs the `after_tool` hooks about this call with its result; what they add to it.
pub(crate) async fn after_tool(
    kernel: &Kernel,
    site: &Site<'_>,
    hooks: &HookSettings,
    call: &SeenCall<'_>,
    result: &superpi_proto::tool::ToolCallResult,
    cancel: &CancellationToken,
) -> String {
    let hooks = hooks.for_tool(HookPoint::AfterTool, call.name);
    if hooks.is_empty() {
        return String::new();
    }
    let output: String = result.output.chars().take(MAX_RESULT_CHARS).collect();
    let fields = json!({"tool": call.json(), "result": {"is_error": result.is_error, "output": output}});
    let payload = site.payload(HookPoint::AfterTool, fields);
    observe(kernel, site, &hooks, HookPoint::AfterTool, payload, Some(cancel)).await
}

/// Runs the `session_start` hooks the first time this kernel runs a turn of the conversation;
/// the context they add for the model, then and at each later turn.
pub(crate) async fn session_start(
    kernel: &Kernel,
    conv: &Arc<Conversation>,
    turn_id: i64,
    cancel: &CancellationToken,
) -> String {
    if let Some(context) = lock(&conv.session_context).clone() {
        return context;
    }
    let hooks = hooks_of(conv).map(|h| h.session_start).unwrap_or_default();
    let workspace = conv.settings().workspace.map(PathBuf::from);
    let site = Site { conv: Some((conv, turn_id)), workspace: workspace.as_deref() };
    let payload = site.payload(HookPoint::SessionStart, json!({}));
    let context = observe(kernel, &site, &hooks, HookPoint::SessionStart, payload, Some(cancel)).await;
    lock(&conv.session_context).get_or_insert(context).clone()
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

/// Runs observing hooks in order; each that does not pass is a warning. The context they
/// add, fenced (a decision is not theirs to make: an `ask` only adds its context).
async fn observe(
    kernel: &Kernel,
    site: &Site<'_>,
    hooks: &[Hook],
    point: HookPoint,
    payload: Value,
    cancel: Option<&CancellationToken>,
) -> String {
    let mut added = String::new();
    for hook in hooks {
        let why = match run(kernel, hook, point, &payload, site.workspace, cancel).await {
            Outcome::Passed(context) | Outcome::Asks(_, context) | Outcome::Rewrites(context, _) => {
                add(&mut added, &hook.name, context);
                continue;
            }
            Outcome::Refused(said) => format!("exited {REFUSE_CODE}: {said}"),
            Outcome::Failed(why) => why,
        };
        site.warn(kernel, format!("the {} hook `{}` failed ({why}); the turn goes on", point.as_str(), hook.name));
    }
    added
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
        Ok(Some(0)) => answered(&out),
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
    use super::{MAX_CONTEXT_CHARS, Outcome, answered, said};

    #[test]
    fn a_hooks_json_answer_decides_and_adds_bounded_context() {
        assert_eq!(answered(b""), Outcome::Passed(None));
        assert_eq!(answered(b"not json\n"), Outcome::Passed(None));
        let mut keys = serde_json::Map::new();
        keys.insert("command".into(), serde_json::json!("ls -la"));
        assert_eq!(answered(br#"{"arguments": {"command": "ls -la"}}"#), Outcome::Rewrites(None, keys));
        assert_eq!(answered(br#"{"arguments": {}}"#), Outcome::Passed(None));
        assert_eq!(answered(br#"{"context": "on call: ana"}"#), Outcome::Passed(Some("on call: ana".into())));
        assert_eq!(answered(br#"{"decision": "deny", "reason": "frozen"}"#), Outcome::Refused("frozen".into()));
        assert_eq!(
            answered(br#"{"decision": "ask", "reason": "a deploy", "context": "c"}"#),
            Outcome::Asks("a deploy".into(), Some("c".into()))
        );
        let long = format!(r#"{{"context": "{}"}}"#, "x".repeat(MAX_CONTEXT_CHARS + 10));
        let Outcome::Passed(Some(cut)) = answered(long.as_bytes()) else { panic!("no context") };
        assert_eq!(cut.chars().count(), MAX_CONTEXT_CHARS + 1);
    }

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

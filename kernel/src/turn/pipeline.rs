//! One tool call, whoever asks for it: the turn loop or `tool.call`. The steps, in order:
//! the tool's facts from the registry; the user's `before_tool` hooks (`hooks.rs`), which may
//! refuse it; the policy's decision; a person asked when the decision is askable and someone
//! can answer, or the consent a `tool.call` caller brings (it fails closed otherwise); an
//! editor's buffer for a read it can stand in for; the lock of every path the call writes; the
//! run (confined, or the registered runner); the `after_tool` hooks; the result.
//!
//! The question steps (`ask`, `settle`, `settle_direct`, the lasting rules) are in
//! `permission.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use superpi_policy::{ConversationPolicy, Decision, Mode, Risk, Rule};
use superpi_proto::Event;
use superpi_proto::event::PermissionRequestFields;
use superpi_proto::tool::{ToolCallResult, ToolDef};
use superpi_sandbox::ToolCall;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::path_locks::PathGuard;
use crate::sync::lock;
use crate::telemetry::traces::SpanContext;
use crate::turn::cluster_holder;
use crate::turn::elicitation::TurnAsker;
use crate::turn::hooks;
use crate::turn::permission::{self, Asked, Lasting, settle, settle_direct};
use superpi_mcp_client::Attached;

/// A call to run: what the model (or a `tool.call` client) asked for, and where.
#[derive(Clone)]
pub(crate) struct PlannedCall {
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    pub workspace: Option<PathBuf>,
}

/// Who asked for a call, which says how it is decided and what it publishes.
pub(crate) enum Caller<'a> {
    /// A turn: the conversation's policy decides, a watching person may be asked, questions
    /// and output are published to the conversation.
    /// Its decisions are in the conversation's mode lowered to `ceiling`, the submitter's.
    /// `trace`: the turn's span, parent of the call's.
    Turn { conv: &'a Arc<Conversation>, turn_id: i64, ceiling: Mode, trace: SpanContext },
    /// `tool.call`: a policy of its own; nobody can be asked, so an askable call runs only
    /// when the caller says its person consented to it (`consented`), and is refused otherwise.
    /// `mcp`: the MCP tools it may call.
    Direct { policy: &'a mut ConversationPolicy, mcp: &'a Attached, consented: bool },
}

/// How a call ended.
pub(crate) enum CallEnd {
    /// It ran (or an editor's buffer answered it): its result.
    Ran(ToolCallResult),
    /// It was refused before it ran.
    Blocked(Refusal),
}

/// Why a call was refused: the message, the rule, and the risk when a person could have lifted
/// the refusal (the rule is then `unanswered` or `rejected`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub reason: String,
    pub rule: Rule,
    pub risk: Option<Risk>,
}

impl Refusal {
    fn new(reason: impl Into<String>, rule: Rule) -> Self {
        Refusal { reason: reason.into(), rule, risk: None }
    }
}

impl CallEnd {
    /// The result the model (or client) gets: a refusal is an error result saying why, with
    /// `details.blocked` naming the rule (and the risk of an askable call), so a caller can tell
    /// a call its person may still allow from one that stays refused.
    pub fn into_result(self) -> ToolCallResult {
        match self {
            CallEnd::Ran(result) => result,
            CallEnd::Blocked(refusal) => {
                let mut blocked = json!({"rule": refusal.rule});
                if let Some(risk) = refusal.risk {
                    blocked["risk"] = json!(risk.as_str());
                }
                let mut result = ToolCallResult::error(format!("blocked: {}", refusal.reason));
                result.details = Some(json!({ "blocked": blocked }));
                result
            }
        }
    }
}

/// A turn's call is announced (`tool_started`) once its `before_tool` hooks have run, with the
/// arguments they left and the keys they rewrote; a direct call is not published.
fn announce(kernel: &Arc<Kernel>, caller: &Caller<'_>, call: &PlannedCall, overwritten: Vec<String>) {
    if let Caller::Turn { conv, turn_id, .. } = caller {
        let event = Event::tool_started(
            conv.id,
            Some(*turn_id),
            &call.call_id,
            &call.name,
            call.arguments.clone(),
            overwritten,
        );
        conv.emit(&**kernel, event);
    }
}

/// Runs one call through every step, counted and traced. Never panics; every failure is a
/// result or a refusal.
pub(crate) async fn run(
    kernel: &Arc<Kernel>,
    caller: Caller<'_>,
    call: &PlannedCall,
    cancel: &CancellationToken,
) -> CallEnd {
    let parent = match &caller {
        Caller::Turn { trace, .. } => Some(*trace),
        Caller::Direct { .. } => None,
    };
    let span = kernel.telemetry.tool_started(parent, &call.name);
    let end = run_steps(kernel, caller, call, cancel).await;
    let status = match &end {
        CallEnd::Ran(result) if result.is_error => "error",
        CallEnd::Ran(_) => "ok",
        CallEnd::Blocked(_) => "blocked",
    };
    kernel.telemetry.tool_ended(span, &call.name, status);
    end
}

async fn run_steps(
    kernel: &Arc<Kernel>,
    mut caller: Caller<'_>,
    call: &PlannedCall,
    cancel: &CancellationToken,
) -> CallEnd {
    // An MCP tool only for a caller that attached it; it runs on that caller's server.
    let route = match &caller {
        Caller::Turn { conv, .. } => lock(&conv.mcp_attached).get(&call.name),
        Caller::Direct { mcp, .. } => mcp.get(&call.name),
    };
    let (tool, route) = match (kernel.catalog.tool(&call.name), route) {
        (Some(tool), _) => (tool, None),
        (None, Some(route)) => (route.def.clone(), Some(route)),
        (None, None) => {
            announce(kernel, &caller, call, Vec::new());
            // A tool of a server that did not start (one waiting for a login): say why.
            let missing = match &caller {
                Caller::Turn { conv, .. } => lock(&conv.mcp_attached).missing_tool(&call.name),
                Caller::Direct { mcp, .. } => mcp.missing_tool(&call.name),
            };
            let reason = missing.unwrap_or_else(|| format!("unknown tool `{}`", call.name));
            return CallEnd::Blocked(Refusal::new(reason, Rule::NotOffered));
        }
    };
    // The user's before_tool hooks first: a call one refuses is not put to a person.
    let hooks = match &caller {
        Caller::Turn { conv, .. } => crate::turn::hooks::hooks_of(conv).unwrap_or_default(),
        Caller::Direct { policy, .. } => policy.settings().hooks.clone(),
    };
    let site = hooks::Site {
        conv: match &caller {
            Caller::Turn { conv, turn_id, .. } => Some((*conv, *turn_id)),
            Caller::Direct { .. } => None,
        },
        workspace: call.workspace.as_deref(),
    };
    let seen = hooks::SeenCall { call_id: &call.call_id, name: &call.name, arguments: &call.arguments };
    let mut verdict = hooks::before_tool(kernel, &site, &hooks, &seen, cancel).await;
    // The call as the hooks left it: what the policy decides and the tool runs.
    let rewritten = verdict.rewritten.take().map(|(arguments, keys)| (PlannedCall { arguments, ..call.clone() }, keys));
    let (call, overwritten) = match &rewritten {
        Some((rewritten, keys)) => (rewritten, keys.clone()),
        None => (call, Vec::new()),
    };
    announce(kernel, &caller, call, overwritten);
    let seen = hooks::SeenCall { call_id: &call.call_id, name: &call.name, arguments: &call.arguments };
    if let Some(reason) = verdict.refused {
        return CallEnd::Blocked(Refusal::new(reason, Rule::Hook));
    }
    let network = match decide(kernel, &mut caller, &tool, call, verdict.ask, cancel).await {
        Ok(network) => network,
        Err(refusal) => return CallEnd::Blocked(refusal),
    };
    if let Caller::Turn { conv, turn_id, .. } = &caller
        && let Some(result) = editor_read(kernel, conv, *turn_id, call, cancel).await
    {
        let mut result = match &caller {
            Caller::Turn { conv, .. } => crate::turn::nested_rules::join(
                kernel,
                conv,
                (&tool, &call.arguments),
                call.workspace.as_deref(),
                result,
            ),
            Caller::Direct { .. } => result,
        };
        let after = hooks::after_tool(kernel, &site, &hooks, &seen, &result, cancel).await;
        result.output.push_str(&format!("{}{after}", verdict.context));
        return CallEnd::Ran(result);
    }
    let _written = lock_written(kernel, &tool, call).await;
    if let Caller::Turn { conv, turn_id, .. } = &caller
        && crate::turn::checkpoint::writes(&tool)
    {
        crate::turn::checkpoint::before_write(kernel, conv, *turn_id).await;
    }
    let grants =
        |p: &superpi_policy::ConversationPolicy| (p.protected_paths(), p.allowed_hosts(), p.extra_roots().to_vec());
    let (protected, allowed_hosts, extra_roots) = match &caller {
        Caller::Turn { conv, .. } => lock(&conv.policy).as_ref().map(grants).unwrap_or_default(),
        Caller::Direct { policy, .. } => grants(policy),
    };
    let (conversation_id, progress, forward) = match &caller {
        Caller::Turn { conv, turn_id, .. } => {
            let (tx, rx) = mpsc::channel::<String>(64);
            (conv.id, Some(tx), Some(forward_output(kernel, conv, *turn_id, call, rx)))
        }
        Caller::Direct { .. } => (0, None, None),
    };
    let request = ToolCall {
        conversation_id,
        call_id: call.call_id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        workspace: call.workspace.clone(),
        network,
        read_only: superpi_policy::read_only::call_is_read_only(&tool, &call.arguments),
        timeout: None,
        protected,
        allowed_hosts,
        extra_roots,
    };
    let result = match route {
        // `tool_search`: the deferred tools it finds are offered to the conversation from now on.
        Some(route) if let Some(found) = route.search(&request.arguments) => {
            drop(progress);
            if let Caller::Turn { conv, .. } = &caller {
                lock(&conv.mcp_loaded).extend(found.names);
            }
            found.result
        }
        Some(route) => {
            drop(progress);
            // A question the server asks during a turn's call goes to the person.
            let asker = match &caller {
                Caller::Turn { conv, turn_id, .. } => {
                    Some(TurnAsker::of(kernel, conv, *turn_id, &call.call_id, cancel))
                }
                Caller::Direct { .. } => None,
            };
            let (result, notices) = kernel.mcp.call(&route, &request, cancel, asker).await;
            let result = kernel.sandbox.bounded(&request, result);
            if let Caller::Turn { conv, turn_id, .. } = &caller {
                for notice in notices {
                    conv.emit(kernel, Event::notice(conv.id, Some(*turn_id), "warning", notice));
                }
            }
            result
        }
        None => kernel.sandbox.run(request, cancel.child_token(), progress).await,
    };
    if let Some(forward) = forward {
        let _ = forward.await;
    }
    let mut result = match &caller {
        Caller::Turn { conv, .. } => {
            crate::turn::nested_rules::join(kernel, conv, (&tool, &call.arguments), call.workspace.as_deref(), result)
        }
        Caller::Direct { .. } => result,
    };
    let after = hooks::after_tool(kernel, &site, &hooks, &seen, &result, cancel).await;
    result.output.push_str(&format!("{}{after}", verdict.context));
    CallEnd::Ran(result)
}

/// The policy's decision, with a person asked (or the caller's consent taken) where the caller
/// allows it; a call a `before_tool` hook asks about (`hook_asks`) that the policy would allow
/// is a question. `Ok(network)` to run.
async fn decide(
    kernel: &Arc<Kernel>,
    caller: &mut Caller<'_>,
    tool: &ToolDef,
    call: &PlannedCall,
    hook_asks: Option<String>,
    cancel: &CancellationToken,
) -> Result<bool, Refusal> {
    let asked_by_hook = |decision: Decision| match (decision, &hook_asks) {
        (Decision::Allow { network }, Some(reason)) => Decision::Ask {
            reason: reason.clone(),
            risk: superpi_policy::Risk::Medium,
            network,
            remember: superpi_policy::Remember::ThisCall,
        },
        (decision, _) => decision,
    };
    let mut asked_risk = None;
    let decision = match caller {
        Caller::Direct { policy, consented, .. } => {
            permission::load_rules(kernel, policy);
            let decision = asked_by_hook(policy.decide(tool, &call.arguments));
            if let Decision::Ask { risk, .. } = decision {
                asked_risk = Some(risk);
            }
            settle_direct(policy, &call.name, decision, *consented)
        }
        Caller::Turn { conv, turn_id, ceiling, .. } => {
            let (decision, asks, asked, notices) = {
                let mut policy = lock(&conv.policy);
                let policy = policy.as_mut().map_err(|reason| Refusal::new(reason.clone(), Rule::Unanswered))?;
                let notices = permission::load_rules(kernel, policy);
                // A remote frontend's answer may allow only what its own ceiling would ask about.
                let remote_ceiling = kernel.catalog.max_mode(policy.harness(), true);
                let at_remote_ceiling = policy.decide_at_most(tool, &call.arguments, remote_ceiling);
                let decision = policy.decide_at_most(tool, &call.arguments, *ceiling);
                // A rule cannot stop a hook asking: its questions offer no lasting answer.
                let lasting = policy.lasting_rules(tool, &call.arguments, &decision).filter(|_| hook_asks.is_none());
                let asked = Asked {
                    turn_id: *turn_id,
                    timeout: policy.question_timeout(),
                    remote_may_allow: !matches!(at_remote_ceiling, Decision::Deny { .. }),
                    lasting: lasting.map(|rules| Lasting { rules, project: policy.workspace().is_some() }),
                };
                // Whether its settings let questions be asked at all (not in an unattended
                // harness); who watches is looked up only for a question (on a shared
                // database it is a query).
                let asks = policy.may_ask(true) && !policy.harness().unattended;
                (asked_by_hook(decision), asks, asked, notices)
            };
            permission::tell_rules_notices(kernel, conv, *turn_id, notices);
            let may_ask = asks
                && matches!(decision, Decision::Ask { .. })
                && cluster_holder::interactive_watcher(kernel, conv)
                && !crate::turn::put_question::scheduled_run(kernel, *turn_id);
            if let Decision::Ask { risk, .. } = decision {
                asked_risk = Some(risk);
            }
            match decision {
                Decision::Ask { ref reason, risk, .. } if may_ask => {
                    let fields = |request_id: String| PermissionRequestFields {
                        request_id,
                        tool_call_id: call.call_id.clone(),
                        tool_name: call.name.clone(),
                        arguments: call.arguments.clone(),
                        reason: reason.clone(),
                        risk: Some(risk.as_str().to_string()),
                    };
                    let answer = permission::ask(kernel, conv, asked, fields, cancel).await;
                    settle(kernel, conv, decision, answer.as_deref())
                }
                Decision::Ask { .. } => settle(kernel, conv, decision, None),
                other => other,
            }
        }
    };
    match decision {
        Decision::Allow { network } => Ok(network),
        Decision::Deny { reason, rule } => Err(Refusal { reason, rule, risk: asked_risk }),
        // `answer` settles every question; an `Ask` left over fails closed all the same.
        Decision::Ask { reason, risk, .. } => Err(Refusal { reason, rule: Rule::Unanswered, risk: Some(risk) }),
    }
}

/// Holds the lock of every path the call writes (its facts say which arguments), so writes of
/// one file from any conversation or `tool.call` run one at a time. Locks are taken in path
/// order, so two calls that write the same paths cannot wait on each other.
async fn lock_written<'k>(kernel: &'k Kernel, tool: &ToolDef, call: &PlannedCall) -> Vec<PathGuard<'k>> {
    let mut paths: Vec<PathBuf> = tool
        .written_paths(&call.arguments)
        .into_iter()
        .map(|path| match &call.workspace {
            Some(workspace) => normalize(workspace, path),
            None => PathBuf::from(path),
        })
        .collect();
    paths.sort();
    paths.dedup();
    let mut guards = Vec::with_capacity(paths.len());
    for path in paths {
        guards.push(kernel.path_locks.lock_path(path).await);
    }
    guards
}

/// Publishes a running call's output as `tool_output` events until the call ends.
fn forward_output(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    call: &PlannedCall,
    mut chunks: mpsc::Receiver<String>,
) -> tokio::task::JoinHandle<()> {
    let (kernel, conv) = (kernel.clone(), conv.clone());
    let (id, name) = (call.call_id.clone(), call.name.clone());
    tokio::spawn(async move {
        while let Some(chunk) = chunks.recv().await {
            conv.emit(&kernel, Event::tool_output(conv.id, Some(turn_id), &id, &name, chunk));
        }
    })
}

/// How long a frontend has to answer a `read_text_file` question before the read goes to disk.
const EDITOR_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// An allowed read that an editor's buffer can stand in for (the registry says which) asks a
/// watching editor for its buffer first (it may hold unsaved changes). `None`: run the tool,
/// as without an editor.
async fn editor_read(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    call: &PlannedCall,
    cancel: &CancellationToken,
) -> Option<ToolCallResult> {
    let reader = *kernel.sandbox.registry().editor_read(&call.name)?;
    if !cluster_holder::file_reader(kernel, conv) {
        return None;
    }
    let workspace = call.workspace.as_ref()?;
    let raw = call.arguments.get(reader.path)?.as_str()?;
    let path = normalize(workspace, raw);
    let offset = call.arguments.get(reader.offset).and_then(Value::as_u64).map(|n| n as usize);
    let limit = call.arguments.get(reader.limit).and_then(Value::as_u64).map(|n| n as usize);
    let mut request = serde_json::Map::new();
    request.insert("kind".into(), json!("read_text_file"));
    request.insert("path".into(), json!(path.display().to_string()));
    request.insert("tool_call_id".into(), json!(call.call_id));
    if let Some(offset) = offset {
        request.insert("offset".into(), json!(offset));
    }
    if let Some(limit) = limit {
        request.insert("limit".into(), json!(limit));
    }
    let (request_id, answer) =
        crate::turn::put_question::ask_ui(kernel, conv, turn_id, request, EDITOR_READ_TIMEOUT, cancel).await?;
    let content = answer.as_ref().and_then(|a| a.get("content")).and_then(Value::as_str).map(str::to_string);
    let outcome = match (&answer, &content) {
        (_, Some(_)) => json!({"outcome": "editor"}),
        (Some(_), None) => json!({"outcome": "disk"}),
        (None, None) => json!({"outcome": "timeout"}),
    };
    conv.emit(kernel, Event::ui_resolved(conv.id, Some(turn_id), &request_id, outcome));
    let content = content?;
    let shown = path.strip_prefix(workspace).map(|p| p.display().to_string()).unwrap_or(raw.to_string());
    Some((reader.render)(&shown, &content, offset, limit))
}

/// A path argument made absolute against the workspace and cleaned of `.` and `..`
/// (lexically: the file may not exist yet), as the policy checked it.
fn normalize(workspace: &Path, path: &str) -> PathBuf {
    superpi_policy::paths::lexical(&workspace.join(path))
}

#[cfg(test)]
mod tests {
    use super::normalize;
    use std::path::{Path, PathBuf};

    #[test]
    fn paths_normalize_against_the_workspace() {
        let ws = Path::new("/w/repo");
        assert_eq!(normalize(ws, "a/./b.txt"), PathBuf::from("/w/repo/a/b.txt"));
        assert_eq!(normalize(ws, "a/../b.txt"), PathBuf::from("/w/repo/b.txt"));
        assert_eq!(normalize(ws, "/etc/x"), PathBuf::from("/etc/x"));
    }
}

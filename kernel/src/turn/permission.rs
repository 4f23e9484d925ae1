//! A person asked about a call, and the answer settled: the permission request with its
//! options (the four, and the lasting ones when the call can be kept as a permission rule),
//! the wait, the answer stored with the conversation ("always" for it) or written as a rule
//! to a rules file ("always for this project", "always for me"), and a `tool.call`'s consent.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use superpi_policy::{Answer, ConversationPolicy, Decision, PermissionRules, Rule, RuleEntry};
use superpi_proto::Event;
use superpi_proto::event::{PermissionOption, PermissionRequestFields};
use superpi_store::QuestionKind;
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::turn::cluster_holder;

/// How a question is asked.
pub(crate) struct Asked {
    pub turn_id: i64,
    pub timeout: Duration,
    /// Whether a remote frontend's answer may allow the call: its ceiling would ask, not refuse.
    pub remote_may_allow: bool,
    /// The rules an "always for this project / for me" answer writes (none: those options
    /// are not offered), and whether the conversation has a project (a workspace).
    pub lasting: Option<Lasting>,
}

/// What a lasting answer to one question writes.
pub(crate) struct Lasting {
    pub rules: Vec<RuleEntry>,
    pub project: bool,
}

impl Lasting {
    fn options(&self) -> Vec<PermissionOption> {
        superpi_proto::event::lasting_permission_options(self.project)
    }
}

/// Reads the permission rules files for a conversation's workspace, as they are now (an
/// edit takes effect at the next call); an unreadable file is an error for every call.
/// Returns, as warning notices, what is newly wrong with a file (ignored, or its allow rules
/// not applying since it changed), to be told once.
pub(crate) fn load_rules(kernel: &Kernel, policy: &mut ConversationPolicy) -> Vec<String> {
    let rules = PermissionRules::load(&kernel.catalog.config_dir, policy.workspace()).map_err(|e| e.to_string());
    let notices = policy.set_rules(rules);
    for notice in &notices {
        tracing::warn!("permission rules: {}", notice.message());
    }
    notices.iter().map(|n| format!("permission rules: {}", n.message())).collect()
}

/// Tells the conversation's watchers what [`load_rules`] found newly wrong.
pub(crate) fn tell_rules_notices(kernel: &Kernel, conv: &Conversation, turn_id: i64, notices: Vec<String>) {
    for message in notices {
        conv.emit(kernel, Event::notice(conv.id, Some(turn_id), "warning", message));
    }
}

/// Writes the rules of a lasting answer to the file its scope names, with a notice saying
/// where (or why not: the call still runs, as answered).
fn write_rules(kernel: &Kernel, conv: &Conversation, turn_id: i64, answer: Answer, lasting: Lasting) {
    let Some(scope) = answer.rule_scope() else { return };
    let workspace = lock(&conv.policy).as_ref().ok().and_then(|p| p.workspace().map(std::path::Path::to_path_buf));
    let patterns: Vec<String> = lasting.rules.iter().map(|r| format!("`{}`", r.pattern())).collect();
    let written = superpi_policy::permission_rules_edit::append(
        &kernel.catalog.config_dir,
        workspace.as_deref(),
        scope,
        lasting.rules,
    );
    let (level, message) = match written {
        Ok(file) => ("info", format!("allowed from now on: {} (a rule in {})", patterns.join(", "), file.display())),
        Err(err) => ("warning", format!("the permission rule could not be written, so it was allowed once: {err}")),
    };
    conv.emit(kernel, Event::notice(conv.id, Some(turn_id), level, message));
}

/// Publishes a permission request (its fields made for the new request id) and waits for an
/// answer, the timeout or cancel. Returns the chosen option id (None when unanswered); a
/// person's answer also publishes ui_resolved. (Also an agent backend's approval request.)
pub(crate) async fn ask(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    asked: Asked,
    fields: impl FnOnce(String) -> PermissionRequestFields,
    cancel: &CancellationToken,
) -> Option<String> {
    let Asked { turn_id, timeout, remote_may_allow, lasting } = asked;
    let more = lasting.as_ref().map(Lasting::options).unwrap_or_default();
    let mut options: Vec<String> =
        superpi_proto::event::permission_options().into_iter().map(|o| o.option_id).collect();
    options.extend(more.iter().map(|o| o.option_id.clone()));
    // Without an unguessable id the question is not asked: it fails closed.
    let (request_id, rx) = kernel.questions.open_permission(conv.id, &conv.owner, options.clone(), remote_may_allow)?;
    cluster_holder::question_opened(kernel, conv, &request_id, QuestionKind::Permission, remote_may_allow);
    let request = Event::permission_request(conv.id, Some(turn_id), fields(request_id.clone()));
    conv.emit(kernel, request.with_permission_options(more));
    let answer = crate::turn::put_question::wait_answer(kernel, conv, turn_id, rx, timeout, cancel).await;
    kernel.questions.close_permission(&request_id);
    cluster_holder::question_closed(kernel, &request_id);
    let outcome = match &answer {
        Some(option) if options.contains(option) => json!({"outcome": "selected", "option_id": option}),
        Some(other) => json!({"outcome": "invalid", "option_id": other}),
        None if cancel.is_cancelled() => json!({"outcome": "cancelled"}),
        None => json!({"outcome": "timeout"}),
    };
    conv.emit(kernel, Event::ui_resolved(conv.id, Some(turn_id), &request_id, outcome));
    let answer = answer.filter(|a| options.contains(a));
    if let (Some(chosen), Some(lasting)) = (answer.as_deref().and_then(Answer::from_option_id), lasting) {
        write_rules(kernel, conv, turn_id, chosen, lasting);
    }
    answer
}

/// Settles a question with a person's answer (None: unanswered, which fails closed). An
/// "always" answer is stored with the conversation.
pub(crate) fn settle(kernel: &Kernel, conv: &Conversation, decision: Decision, option_id: Option<&str>) -> Decision {
    let mut policy = lock(&conv.policy);
    let policy = match policy.as_mut() {
        Ok(policy) => policy,
        Err(reason) => return Decision::Deny { reason: reason.clone(), rule: Rule::Unanswered },
    };
    let before = policy.overrides().clone();
    let decision = policy.answer(decision, option_id);
    if *policy.overrides() != before {
        let stored = serde_json::to_string(policy.overrides())
            .map_err(|e| e.to_string())
            .and_then(|json| kernel.store.set_permission_overrides(conv.id, &json).map_err(|e| e.to_string()));
        if let Err(err) = stored {
            tracing::error!("conversation {}: storing a permission answer: {err}", conv.id);
        }
    }
    decision
}

/// Settles a `tool.call`'s decision: nobody can be asked there, so the caller's word stands in
/// for the answer. A caller that says its person consented (an MCP host that asked its user)
/// answers `allow_once`, unless settings say questions are not put to anyone (`ask: false`);
/// otherwise the question fails closed. Only an `Ask` changes: a refusal that is never
/// askable stays refused whatever the caller says.
pub(crate) fn settle_direct(
    policy: &mut ConversationPolicy,
    tool: &str,
    decision: Decision,
    consented: bool,
) -> Decision {
    let answer = (policy.may_ask(consented) && decision.askable()).then_some(Answer::AllowOnce.option_id());
    if answer.is_some() {
        tracing::info!(tool, "tool.call: allowed on the caller's consent");
    }
    policy.answer(decision, answer)
}

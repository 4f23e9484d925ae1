//! Questions to a person about a tool call: publishing a permission request, waiting for the
//! answer (or the timeout, or cancel), and settling the decision with it. An unanswered
//! question fails closed.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use superpi_policy::Decision;
use superpi_proto::Event;
use superpi_proto::event::PermissionRequestFields;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::{Kernel, PendingQuestion, lock};

/// Publishes a permission request (its fields made for the new request id) and waits for an
/// answer, the timeout or cancel. Returns the chosen option id (None when unanswered); a
/// person's answer also publishes ui_resolved.
pub(crate) async fn ask(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    fields: impl FnOnce(String) -> PermissionRequestFields,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Option<String> {
    let request_id = kernel.next_request_id();
    let (tx, rx) = oneshot::channel();
    let options: Vec<String> = superpi_proto::event::permission_options().into_iter().map(|o| o.option_id).collect();
    lock(&kernel.questions).insert(
        request_id.clone(),
        PendingQuestion { conversation_id: conv.id, owner: conv.owner.clone(), options: options.clone(), answer: tx },
    );
    conv.emit(kernel, Event::permission_request(conv.id, Some(turn_id), fields(request_id.clone())));
    let answer = tokio::select! {
        answer = rx => answer.ok(),
        _ = tokio::time::sleep(timeout) => None,
        _ = cancel.cancelled() => None,
    };
    lock(&kernel.questions).remove(&request_id);
    let outcome = match &answer {
        Some(option) if options.contains(option) => json!({"outcome": "selected", "option_id": option}),
        Some(other) => json!({"outcome": "invalid", "option_id": other}),
        None if cancel.is_cancelled() => json!({"outcome": "cancelled"}),
        None => json!({"outcome": "timeout"}),
    };
    conv.emit(kernel, Event::ui_resolved(conv.id, Some(turn_id), &request_id, outcome));
    answer.filter(|a| options.contains(a))
}

/// Settles a question with a person's answer (None: unanswered, which fails closed). An
/// "always" answer is stored with the conversation.
pub(crate) fn settle(kernel: &Kernel, conv: &Conversation, decision: Decision, option_id: Option<&str>) -> Decision {
    let mut policy = lock(&conv.policy);
    let policy = match policy.as_mut() {
        Ok(policy) => policy,
        Err(reason) => return Decision::Deny { reason: reason.clone(), rule: superpi_policy::Rule::Unanswered },
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

/// Drops every open question of a conversation: their waiters fail closed.
pub(crate) fn cancel_questions(kernel: &Kernel, conversation_id: i64) {
    lock(&kernel.questions).retain(|_, q| q.conversation_id != conversation_id);
}

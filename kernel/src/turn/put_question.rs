//! A question put to the person through the conversation's frontends, as a `ui_request` of
//! kind question: `ask_question`'s (tools/question.rs), and an MCP server's questions during a
//! call (`elicitation.rs`). Refused at once where nobody can answer. Also `ask_ui`, which
//! publishes any `ui_request` and waits for its answer (an editor's buffer read's too).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use superpi_proto::Event;
use superpi_proto::question::{QuestionAnswer, QuestionRequest};
use superpi_store::QuestionKind;
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::turn::cluster_holder;

/// How a question put to the person ended.
pub(crate) enum Put {
    /// The answers by question id, checked against their schemas.
    Answered(Map<String, Value>),
    /// Not answered, by the person's choice or in time: what happened.
    Declined(String),
    /// The person dismissed it.
    Dismissed,
    /// The turn was cancelled meanwhile.
    Cancelled,
    /// It could not be asked, or its answer was refused: why.
    Refused(String),
}

/// Puts `request` to the person through the conversation's frontends (`ask_question`'s, and
/// an MCP server's questions during a call); refused at once where nobody can answer.
pub(crate) async fn put(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    request: QuestionRequest,
    cancel: &CancellationToken,
) -> Put {
    let (asks, timeout) = match &*lock(&conv.policy) {
        Ok(policy) => (policy.may_ask(true) && !policy.harness().unattended, policy.question_timeout()),
        Err(reason) => return Put::Refused(reason.clone()),
    };
    if !asks || !cluster_holder::interactive_watcher(kernel, conv) || scheduled_run(kernel, turn_id) {
        return Put::Refused(
            "nobody can answer a question here (no person follows this conversation: a pipe, a schedule, \
             an unattended harness, or settings that ask no one); go on without the answer, or say what you \
             need in your reply"
                .into(),
        );
    }
    let map = match serde_json::to_value(&request) {
        Ok(Value::Object(map)) => map,
        _ => return Put::Refused("the questions could not be written".into()),
    };
    let Some((request_id, answer)) = ask_ui(kernel, conv, turn_id, map, timeout, cancel).await else {
        return Put::Refused("the question could not be asked (no random id)".into());
    };
    let (outcome, put) = match answer.as_ref().map(QuestionAnswer::from_outcome) {
        Some(Some(QuestionAnswer::Accept(answers))) => match request.check(&answers) {
            Ok(answers) => ("answered", Put::Answered(answers)),
            Err(why) => ("invalid", Put::Refused(format!("the person's answer was refused: {why}"))),
        },
        Some(Some(QuestionAnswer::Decline)) => ("declined", Put::Declined("declined to answer".into())),
        Some(Some(QuestionAnswer::Cancel)) => ("cancelled", Put::Dismissed),
        Some(Some(QuestionAnswer::Unavailable(why))) => {
            ("unavailable", Put::Refused(format!("nobody can answer a question here: {why}")))
        }
        Some(None) => ("invalid", Put::Refused("the frontend's answer was not an answer".into())),
        None if cancel.is_cancelled() => ("cancelled", Put::Cancelled),
        None => ("timeout", Put::Declined(format!("did not answer within {} s", timeout.as_secs()))),
    };
    conv.emit(kernel, Event::ui_resolved(conv.id, Some(turn_id), &request_id, json!({"outcome": outcome})));
    put
}

/// Publishes a `ui_request` (`request`, under a new request id) and waits for its answer, the
/// timeout or cancel: the request id and the answer (None when unanswered). The asker
/// publishes the `ui_resolved` that says what became of it. `None` without a random id.
pub(crate) async fn ask_ui(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    request: serde_json::Map<String, Value>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Option<(String, Option<Value>)> {
    let (request_id, rx) = kernel.questions.open_ui(conv.id, &conv.owner)?;
    cluster_holder::question_opened(kernel, conv, &request_id, QuestionKind::Ui, false);
    conv.emit(kernel, Event::ui_request(conv.id, Some(turn_id), &request_id, request));
    let answer = wait_answer(kernel, conv, turn_id, rx, timeout, cancel).await;
    kernel.questions.close_ui(&request_id);
    cluster_holder::question_closed(kernel, &request_id);
    Some((request_id, answer))
}

/// Waits for the answer to a question just published (a permission request or a
/// `ui_request`), its timeout or the turn's cancel (None then); the conversation's state says
/// `waiting` meanwhile.
pub(crate) async fn wait_answer<T>(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    answer: tokio::sync::oneshot::Receiver<T>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Option<T> {
    conv.question_opened(&**kernel, turn_id);
    let answer = tokio::select! {
        answer = answer => answer.ok(),
        _ = tokio::time::sleep(timeout) => None,
        _ = cancel.cancelled() => None,
    };
    conv.question_closed(&**kernel, turn_id);
    answer
}

/// Whether a schedule's run submitted this turn: nobody is present at it, whoever watches.
/// Read from the store (a run queued through another kernel is known there too); unreadable
/// counts as scheduled, so a question fails closed.
pub(crate) fn scheduled_run(kernel: &Kernel, turn_id: i64) -> bool {
    kernel.store.scheduled_turn(turn_id).unwrap_or_else(|err| {
        tracing::warn!(turn_id, "reading whether a schedule ran this turn: {err}");
        true
    })
}

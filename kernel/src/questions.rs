//! What the kernel waits on a person or a frontend for: permission questions (answered by
//! `permission.respond`) and `ui_request`s (answered by `ui.respond`), by request id. Only the
//! owner of the asking conversation can answer. The flows that ask are in `pipeline.rs`; an
//! unanswered question fails closed there.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::oneshot;

use crate::sync::lock;

/// A question waiting for a person's answer.
struct PendingQuestion {
    conversation_id: i64,
    owner: String,
    options: Vec<String>,
    answer: oneshot::Sender<String>,
}

/// A `ui_request` waiting for a frontend's answer.
struct PendingUi {
    owner: String,
    answer: oneshot::Sender<Value>,
}

/// An answer to a request that is not open, or not the answerer's to answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NotOpen;

pub(crate) struct Questions {
    permissions: Mutex<HashMap<String, PendingQuestion>>,
    ui_requests: Mutex<HashMap<String, PendingUi>>,
    next_request: AtomicU64,
}

impl Questions {
    pub fn new() -> Questions {
        Questions {
            permissions: Mutex::new(HashMap::new()),
            ui_requests: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
        }
    }

    fn next_request_id(&self) -> String {
        format!("perm-{}-{}", std::process::id(), self.next_request.fetch_add(1, Ordering::Relaxed))
    }

    /// Opens a permission question of a conversation: its request id and where its answer
    /// (an option id, checked by the asker) arrives.
    pub fn open_permission(
        &self,
        conversation_id: i64,
        owner: &str,
        options: Vec<String>,
    ) -> (String, oneshot::Receiver<String>) {
        let request_id = self.next_request_id();
        let (answer, rx) = oneshot::channel();
        let question = PendingQuestion { conversation_id, owner: owner.to_string(), options, answer };
        lock(&self.permissions).insert(request_id.clone(), question);
        (request_id, rx)
    }

    pub fn close_permission(&self, request_id: &str) {
        lock(&self.permissions).remove(request_id);
    }

    /// Answers a permission question for `principal`: whether the option is one it offered.
    pub fn answer_permission(&self, principal: &str, request_id: &str, option_id: String) -> Result<bool, NotOpen> {
        let question = take_owned(&self.permissions, |q| &q.owner, principal, request_id)?;
        let valid = question.options.contains(&option_id);
        let _ = question.answer.send(option_id);
        Ok(valid)
    }

    /// Drops every open question of a conversation: their waiters fail closed.
    pub fn cancel_conversation(&self, conversation_id: i64) {
        lock(&self.permissions).retain(|_, q| q.conversation_id != conversation_id);
    }

    /// Opens a `ui_request` for `owner`'s frontends: its request id and where its outcome arrives.
    pub fn open_ui(&self, owner: &str) -> (String, oneshot::Receiver<Value>) {
        let request_id = self.next_request_id();
        let (answer, rx) = oneshot::channel();
        lock(&self.ui_requests).insert(request_id.clone(), PendingUi { owner: owner.to_string(), answer });
        (request_id, rx)
    }

    pub fn close_ui(&self, request_id: &str) {
        lock(&self.ui_requests).remove(request_id);
    }

    /// Answers a `ui_request` for `principal`: whether its asker still waited.
    pub fn answer_ui(&self, principal: &str, request_id: &str, outcome: Value) -> Result<bool, NotOpen> {
        let pending = take_owned(&self.ui_requests, |q| &q.owner, principal, request_id)?;
        Ok(pending.answer.send(outcome).is_ok())
    }
}

/// Takes the open request `request_id` out of `table` when `principal` owns it; another
/// principal's request answers exactly like a missing one.
fn take_owned<T>(
    table: &Mutex<HashMap<String, T>>,
    owner: impl Fn(&T) -> &String,
    principal: &str,
    request_id: &str,
) -> Result<T, NotOpen> {
    let mut table = lock(table);
    match table.get(request_id) {
        Some(pending) if owner(pending) == principal => table.remove(request_id).ok_or(NotOpen),
        _ => Err(NotOpen),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_owner_answers_a_question_and_only_once() {
        let questions = Questions::new();
        let (id, mut rx) = questions.open_permission(7, "alice", vec!["allow_once".into()]);
        assert_eq!(questions.answer_permission("mallory", &id, "allow_once".into()), Err(NotOpen));
        assert_eq!(questions.answer_permission("alice", &id, "allow_once".into()), Ok(true));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("allow_once"));
        assert_eq!(questions.answer_permission("alice", &id, "allow_once".into()), Err(NotOpen));
    }

    #[test]
    fn an_option_not_offered_is_passed_on_but_not_accepted() {
        let questions = Questions::new();
        let (id, mut rx) = questions.open_permission(7, "alice", vec!["allow_once".into()]);
        assert_eq!(questions.answer_permission("alice", &id, "sure".into()), Ok(false));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("sure"));
    }

    #[test]
    fn cancelling_a_conversation_drops_its_questions_only() {
        let questions = Questions::new();
        let (_, mut ours) = questions.open_permission(7, "alice", vec![]);
        let (theirs_id, _theirs) = questions.open_permission(8, "alice", vec!["x".into()]);
        questions.cancel_conversation(7);
        assert!(matches!(ours.try_recv(), Err(oneshot::error::TryRecvError::Closed)));
        assert_eq!(questions.answer_permission("alice", &theirs_id, "x".into()), Ok(true));
    }

    #[test]
    fn a_ui_request_answered_after_its_asker_left_is_not_accepted() {
        let questions = Questions::new();
        let (id, rx) = questions.open_ui("alice");
        assert_eq!(questions.answer_ui("bob", &id, json!({})), Err(NotOpen));
        drop(rx);
        assert_eq!(questions.answer_ui("alice", &id, json!({"content": "x"})), Ok(false));
        let (closed, _rx) = questions.open_ui("alice");
        questions.close_ui(&closed);
        assert_eq!(questions.answer_ui("alice", &closed, json!({})), Err(NotOpen));
    }
}

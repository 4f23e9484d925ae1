//! What the kernel waits on a person or a frontend for: permission questions (answered by
//! `permission.respond`) and `ui_request`s (answered by `ui.respond`), by request id. Only the
//! owner of the asking conversation can answer. The flows that ask are in `pipeline.rs`; an
//! unanswered question fails closed there.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::oneshot;

use superpi_policy::Answer;

use crate::sync::lock;

/// A question waiting for a person's answer.
struct PendingQuestion {
    conversation_id: i64,
    owner: String,
    options: Vec<String>,
    /// Whether a remote frontend may answer with an allow: its ceiling would ask, not refuse.
    remote_may_allow: bool,
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

/// Why an answer to a permission question was not taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No such open question of this principal.
    NotOpen,
    /// A remote frontend's allow for a call its ceiling refuses; the question stays open.
    AboveRemoteCeiling,
}

/// Who answers a permission question.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answerer<'a> {
    pub principal: &'a str,
    pub remote: bool,
}

pub(crate) struct Questions {
    permissions: Mutex<HashMap<String, PendingQuestion>>,
    ui_requests: Mutex<HashMap<String, PendingUi>>,
}

impl Questions {
    pub fn new() -> Questions {
        Questions { permissions: Mutex::new(HashMap::new()), ui_requests: Mutex::new(HashMap::new()) }
    }

    /// Opens a permission question of a conversation: its request id and where its answer
    /// (an option id, checked by the asker) arrives. `None` without randomness for its id:
    /// the asker fails closed.
    pub fn open_permission(
        &self,
        conversation_id: i64,
        owner: &str,
        options: Vec<String>,
        remote_may_allow: bool,
    ) -> Option<(String, oneshot::Receiver<String>)> {
        let request_id = new_request_id()?;
        let (answer, rx) = oneshot::channel();
        let question = PendingQuestion { conversation_id, owner: owner.to_string(), options, remote_may_allow, answer };
        lock(&self.permissions).insert(request_id.clone(), question);
        Some((request_id, rx))
    }

    pub fn close_permission(&self, request_id: &str) {
        lock(&self.permissions).remove(request_id);
    }

    /// Answers a permission question for `by`: whether the option is one it offered. A remote
    /// answerer may refuse anything but allow only what its ceiling would have asked about.
    pub fn answer_permission(&self, by: Answerer<'_>, request_id: &str, option_id: String) -> Result<bool, Refused> {
        let allows = matches!(Answer::from_option_id(&option_id), Some(Answer::AllowOnce | Answer::AllowAlways));
        let above_ceiling = |q: &PendingQuestion| by.remote && allows && !q.remote_may_allow;
        if lock(&self.permissions).get(request_id).is_some_and(|q| q.owner == by.principal && above_ceiling(q)) {
            return Err(Refused::AboveRemoteCeiling);
        }
        let question = take_owned(&self.permissions, |q| &q.owner, by.principal, request_id)
            .map_err(|NotOpen| Refused::NotOpen)?;
        let valid = question.options.contains(&option_id);
        let _ = question.answer.send(option_id);
        Ok(valid)
    }

    /// Drops every open question of a conversation: their waiters fail closed.
    pub fn cancel_conversation(&self, conversation_id: i64) {
        lock(&self.permissions).retain(|_, q| q.conversation_id != conversation_id);
    }

    /// Opens a `ui_request` for `owner`'s frontends: its request id and where its outcome arrives.
    /// `None` without randomness for its id: the asker goes on without asking.
    pub fn open_ui(&self, owner: &str) -> Option<(String, oneshot::Receiver<Value>)> {
        let request_id = new_request_id()?;
        let (answer, rx) = oneshot::channel();
        lock(&self.ui_requests).insert(request_id.clone(), PendingUi { owner: owner.to_string(), answer });
        Some((request_id, rx))
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

/// A fresh id for a question or a `ui_request`: 128 random bits, so that nobody who did not
/// see the question (another principal, a frontend of the same principal that does not
/// watch) can answer it by guessing. `None` when the system has no randomness to give.
fn new_request_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    match getrandom::fill(&mut bytes) {
        Ok(()) => Some(format!("perm-{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())),
        Err(err) => {
            tracing::error!("no randomness for a question id: {err}");
            None
        }
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

    fn local(principal: &str) -> Answerer<'_> {
        Answerer { principal, remote: false }
    }

    #[test]
    fn ids_are_128_random_bits() {
        let questions = Questions::new();
        let (a, _) = questions.open_permission(7, "alice", vec![], true).unwrap();
        let (b, _) = questions.open_ui("alice").unwrap();
        for id in [&a, &b] {
            let hex = id.strip_prefix("perm-").unwrap();
            assert!(hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        }
        assert!(a.bytes().zip(b.bytes()).filter(|(x, y)| x != y).count() > 16, "{a} {b}");
    }

    #[test]
    fn a_remote_answerer_may_refuse_but_not_allow_above_its_ceiling() {
        let questions = Questions::new();
        let options = vec!["allow_once".to_string(), "reject_once".to_string()];
        let (id, mut rx) = questions.open_permission(7, "alice", options, false).unwrap();
        let remote = Answerer { principal: "alice", remote: true };
        for allow in ["allow_once", "allow_always"] {
            assert_eq!(questions.answer_permission(remote, &id, allow.into()), Err(Refused::AboveRemoteCeiling));
        }
        assert!(rx.try_recv().is_err(), "still open");
        assert_eq!(questions.answer_permission(remote, &id, "reject_once".into()), Ok(true));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("reject_once"));
    }

    #[test]
    fn only_the_owner_answers_a_question_and_only_once() {
        let questions = Questions::new();
        let (id, mut rx) = questions.open_permission(7, "alice", vec!["allow_once".into()], true).unwrap();
        assert_eq!(questions.answer_permission(local("mallory"), &id, "allow_once".into()), Err(Refused::NotOpen));
        assert_eq!(questions.answer_permission(local("alice"), &id, "allow_once".into()), Ok(true));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("allow_once"));
        assert_eq!(questions.answer_permission(local("alice"), &id, "allow_once".into()), Err(Refused::NotOpen));
    }

    #[test]
    fn an_option_not_offered_is_passed_on_but_not_accepted() {
        let questions = Questions::new();
        let (id, mut rx) = questions.open_permission(7, "alice", vec!["allow_once".into()], true).unwrap();
        assert_eq!(questions.answer_permission(local("alice"), &id, "sure".into()), Ok(false));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("sure"));
    }

    #[test]
    fn cancelling_a_conversation_drops_its_questions_only() {
        let questions = Questions::new();
        let (_, mut ours) = questions.open_permission(7, "alice", vec![], true).unwrap();
        let (theirs_id, _theirs) = questions.open_permission(8, "alice", vec!["x".into()], true).unwrap();
        questions.cancel_conversation(7);
        assert!(matches!(ours.try_recv(), Err(oneshot::error::TryRecvError::Closed)));
        assert_eq!(questions.answer_permission(local("alice"), &theirs_id, "x".into()), Ok(true));
    }

    #[test]
    fn a_ui_request_answered_after_its_asker_left_is_not_accepted() {
        let questions = Questions::new();
        let (id, rx) = questions.open_ui("alice").unwrap();
        assert_eq!(questions.answer_ui("bob", &id, json!({})), Err(NotOpen));
        drop(rx);
        assert_eq!(questions.answer_ui("alice", &id, json!({"content": "x"})), Ok(false));
        let (closed, _rx) = questions.open_ui("alice").unwrap();
        questions.close_ui(&closed);
        assert_eq!(questions.answer_ui("alice", &closed, json!({})), Err(NotOpen));
    }
}

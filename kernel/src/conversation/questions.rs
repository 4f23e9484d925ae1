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
    conversation_id: i64,
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
    #[cfg(test)]
    pub fn answer_permission(&self, by: Answerer<'_>, request_id: &str, option_id: String) -> Result<bool, Refused> {
        self.answer_permission_first(by, request_id, option_id, || true)
    }

    /// [`Self::answer_permission`], when `first` says this answer came before any other (the
    /// store's word on a database several kernels share, where another kernel may have stored
    /// one): else the question is not open to it, and stays open for the answer that came first.
    pub fn answer_permission_first(
        &self,
        by: Answerer<'_>,
        request_id: &str,
        option_id: String,
        first: impl FnOnce() -> bool,
    ) -> Result<bool, Refused> {
        // Held until the answer is sent: nothing delivers another answer in between.
        let mut permissions = lock(&self.permissions);
        match permissions.get(request_id) {
            Some(q) if q.owner == by.principal => {
                if above_remote_ceiling(by, &option_id, q.remote_may_allow) {
                    return Err(Refused::AboveRemoteCeiling);
                }
            }
            _ => return Err(Refused::NotOpen),
        }
        if !first() {
            return Err(Refused::NotOpen);
        }
        let question = permissions.remove(request_id).ok_or(Refused::NotOpen)?;
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
    pub fn open_ui(&self, conversation_id: i64, owner: &str) -> Option<(String, oneshot::Receiver<Value>)> {
        let request_id = new_request_id()?;
        let (answer, rx) = oneshot::channel();
        let pending = PendingUi { conversation_id, owner: owner.to_string(), answer };
        lock(&self.ui_requests).insert(request_id.clone(), pending);
        Some((request_id, rx))
    }

    pub fn close_ui(&self, request_id: &str) {
        lock(&self.ui_requests).remove(request_id);
    }

    /// Answers a `ui_request` for `principal`: whether its asker still waited.
    #[cfg(test)]
    pub fn answer_ui(&self, principal: &str, request_id: &str, outcome: Value) -> Result<bool, NotOpen> {
        self.answer_ui_first(principal, request_id, outcome, || true)
    }

    /// [`Self::answer_ui`], when `first` says this answer came before any other (as for
    /// [`Self::answer_permission_first`]).
    pub fn answer_ui_first(
        &self,
        principal: &str,
        request_id: &str,
        outcome: Value,
        first: impl FnOnce() -> bool,
    ) -> Result<bool, NotOpen> {
        let mut requests = lock(&self.ui_requests);
        match requests.get(request_id) {
            Some(pending) if pending.owner == principal && first() => {}
            _ => return Err(NotOpen),
        }
        let pending = requests.remove(request_id).ok_or(NotOpen)?;
        Ok(pending.answer.send(outcome).is_ok())
    }

    /// Hands an answer another kernel took (it checked who answered, and against which
    /// ceiling) to the open question or `ui_request` of that id: a permission answer is its
    /// option id (a JSON string), a `ui_request`'s its outcome. Whether its asker still waited.
    pub fn deliver(&self, request_id: &str, answer: Value) -> bool {
        if let Some(question) = lock(&self.permissions).remove(request_id) {
            // Anything but an option id is an invalid answer, which fails closed.
            let option = match answer {
                Value::String(option) => option,
                other => other.to_string(),
            };
            return question.answer.send(option).is_ok();
        }
        match lock(&self.ui_requests).remove(request_id) {
            Some(pending) => pending.answer.send(answer).is_ok(),
            None => false,
        }
    }

    /// The conversations with a question or `ui_request` open.
    pub fn asking(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = lock(&self.permissions).values().map(|q| q.conversation_id).collect();
        ids.extend(lock(&self.ui_requests).values().map(|q| q.conversation_id));
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// Whether `by`'s answer allows a call its remote ceiling would refuse (a remote frontend may
/// refuse anything, but allow only what its ceiling would have asked about).
pub(crate) fn above_remote_ceiling(by: Answerer<'_>, option_id: &str, remote_may_allow: bool) -> bool {
    let allows = Answer::from_option_id(option_id).is_some_and(Answer::allows);
    by.remote && allows && !remote_may_allow
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
        let (b, _) = questions.open_ui(7, "alice").unwrap();
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
    fn an_answer_taken_by_another_kernel_reaches_its_asker() {
        let questions = Questions::new();
        let (permission, mut asked) = questions.open_permission(7, "alice", vec!["allow_once".into()], true).unwrap();
        let (ui, mut read) = questions.open_ui(8, "alice").unwrap();
        assert_eq!(questions.asking(), vec![7, 8]);
        assert!(questions.deliver(&permission, json!("allow_once")));
        assert_eq!(asked.try_recv().ok().as_deref(), Some("allow_once"));
        assert!(questions.deliver(&ui, json!({"content": "x"})));
        assert_eq!(read.try_recv().ok(), Some(json!({"content": "x"})));
        // Once: both are closed now.
        assert!(!questions.deliver(&permission, json!("allow_once")));
        assert!(questions.asking().is_empty());
        // Not an option id: passed on as it is, which the asker refuses.
        let (id, mut rx) = questions.open_permission(7, "alice", vec!["allow_once".into()], true).unwrap();
        assert!(questions.deliver(&id, json!({"x": 1})));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("{\"x\":1}"));
    }

    /// One question, two answers: one through this kernel, one stored by another kernel. The
    /// store says which came first; the other is refused, and the question stays open for the
    /// first, which is then delivered.
    #[test]
    fn of_a_local_and_a_forwarded_answer_only_the_first_is_accepted() {
        let questions = Questions::new();
        let (id, mut rx) = questions.open_permission(7, "alice", vec!["allow_once".into()], true).unwrap();
        assert_eq!(
            questions.answer_permission_first(local("alice"), &id, "allow_once".into(), || false),
            Err(Refused::NotOpen)
        );
        assert!(rx.try_recv().is_err(), "still open for the answer stored first");
        assert!(questions.deliver(&id, json!("reject_once")));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("reject_once"));
        let (ui, mut read) = questions.open_ui(7, "alice").unwrap();
        assert_eq!(questions.answer_ui_first("alice", &ui, json!({"content": "here"}), || false), Err(NotOpen));
        assert!(questions.deliver(&ui, json!({"content": "there"})));
        assert_eq!(read.try_recv().ok(), Some(json!({"content": "there"})));
        // Not asked when it is not the answerer's question.
        let (other, _rx) = questions.open_permission(7, "alice", vec![], true).unwrap();
        let asked = std::cell::Cell::new(false);
        let first = || {
            asked.set(true);
            true
        };
        assert_eq!(questions.answer_permission_first(local("bob"), &other, "x".into(), first), Err(Refused::NotOpen));
        assert!(!asked.get());
    }

    #[test]
    fn a_ui_request_answered_after_its_asker_left_is_not_accepted() {
        let questions = Questions::new();
        let (id, rx) = questions.open_ui(7, "alice").unwrap();
        assert_eq!(questions.answer_ui("bob", &id, json!({})), Err(NotOpen));
        drop(rx);
        assert_eq!(questions.answer_ui("alice", &id, json!({"content": "x"})), Ok(false));
        let (closed, _rx) = questions.open_ui(7, "alice").unwrap();
        questions.close_ui(&closed);
        assert_eq!(questions.answer_ui("alice", &closed, json!({})), Err(NotOpen));
    }
}

//! What a kernel that does not run a conversation passes to the one that does (its lease
//! holder), through the database: a person's answers to the holder's questions, and which of
//! its frontends watch the conversation (so the holder asks them as it asks its own, and sends
//! them its deltas). On SQLite one kernel holds the file and nobody calls these; the same rules
//! keep one store suite.

use std::sync::Arc;

use super::StoreError;
use super::live::LiveBatch;

/// What kind of question is open: a permission question or a `ui_request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionKind {
    Permission,
    Ui,
}

impl QuestionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionKind::Permission => "permission",
            QuestionKind::Ui => "ui",
        }
    }

    pub fn parse(kind: &str) -> Option<QuestionKind> {
        match kind {
            "permission" => Some(QuestionKind::Permission),
            "ui" => Some(QuestionKind::Ui),
            _ => None,
        }
    }
}

/// A question the lease holder asks, as another kernel finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenQuestion {
    pub request_id: String,
    pub conversation_id: i64,
    /// The principal who may answer it (the conversation's owner).
    pub owner: String,
    pub kind: QuestionKind,
    /// Whether a remote frontend may answer it with an allow (its ceiling would ask).
    pub remote_may_allow: bool,
}

/// How many frontends watch a conversation, how many of them interactively (they answer
/// permission questions) and how many read files for it (editors with unsaved buffers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Watchers {
    pub watching: u32,
    pub interactive: u32,
    pub readers: u32,
}

impl Watchers {
    pub fn is_empty(&self) -> bool {
        self.watching == 0 && self.interactive == 0 && self.readers == 0
    }
}

pub trait Forwarding {
    /// Records a question the lease holder asks, until it closes.
    fn open_question(&self, question: &OpenQuestion) -> Result<(), StoreError>;

    /// A question still open and not yet answered.
    fn question(&self, request_id: &str) -> Result<Option<OpenQuestion>, StoreError>;

    /// Stores the answer (JSON) of a question open and not yet answered, and tells its holder
    /// (`Notice::Answer`); false when there is no such question.
    fn answer_question(&self, request_id: &str, answer: &str) -> Result<bool, StoreError>;

    /// Stores the answer given through the holder itself unless one given through another
    /// kernel was stored first (false: that one wins). A question not recorded (its recording
    /// failed) has no other answer: true.
    fn answer_first(&self, request_id: &str, answer: &str) -> Result<bool, StoreError>;

    /// Takes the answers stored for a conversation's questions, as (request id, answer JSON):
    /// those questions are gone from the store.
    fn take_answers(&self, conversation_id: i64) -> Result<Vec<(String, String)>, StoreError>;

    /// The question closed (answered, timed out, cancelled).
    fn close_question(&self, request_id: &str) -> Result<(), StoreError>;

    /// Says how many of `kernel`'s frontends watch the conversation, for `ttl_ms` unless
    /// renewed, and tells its holder (`Notice::Watchers`); none removes what it said.
    fn set_watchers(
        &self,
        conversation_id: i64,
        kernel: &str,
        watchers: Watchers,
        ttl_ms: i64,
    ) -> Result<(), StoreError>;

    /// Extends what `kernel` said of its watchers by `ttl_ms`.
    fn renew_watchers(&self, kernel: &str, ttl_ms: i64) -> Result<(), StoreError>;

    /// The watchers of the conversation on kernels other than `kernel` that still renew them.
    fn watchers_elsewhere(&self, conversation_id: i64, kernel: &str) -> Result<Watchers, StoreError>;

    /// Which of these conversations have a turn running, whichever kernel runs it.
    fn running(&self, conversation_ids: &[i64]) -> Result<Vec<i64>, StoreError>;

    /// Tells the other kernels' watchers deltas of a conversation this kernel runs (in seq
    /// order, after those told before); nobody hears them on SQLite.
    fn tell_live(&self, conversation_id: i64, events: &[(u64, String)]) -> Result<(), StoreError>;

    /// The deltas other kernels tell, as heard; `None` when nobody else can (SQLite).
    fn live(&self) -> Option<tokio::sync::broadcast::Receiver<Arc<LiveBatch>>>;
}

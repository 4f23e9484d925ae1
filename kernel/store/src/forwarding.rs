//! What a kernel that does not run a conversation passes to the one that does (its lease
//! holder), through the database: a person's answers to the holder's questions, and which of
//! its frontends watch the conversation (so the holder asks them as it asks its own, and sends
//! them its deltas). On SQLite one kernel holds the file and nobody calls these; the same rules
//! keep one store suite.

use super::{Lease, StoreError};

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

/// What a kernel that does not run a conversation asks its holder to run between turns, and
/// waits for the answer of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// `session.compact`.
    Compact,
    /// `session.clear`.
    Clear,
}

impl JobKind {
    const NAMES: [(JobKind, &'static str); 2] = [(JobKind::Compact, "compact"), (JobKind::Clear, "clear")];

    pub fn as_str(self) -> &'static str {
        Self::NAMES.iter().find(|(kind, _)| *kind == self).map_or("", |(_, name)| name)
    }

    pub fn parse(name: &str) -> Result<JobKind, StoreError> {
        let found = Self::NAMES.iter().find(|(_, n)| *n == name).map(|(kind, _)| *kind);
        found.ok_or_else(|| StoreError::Corrupt(format!("job kind {name}")))
    }
}

/// A count as stored, back (a negative or huge one is corrupt; read as none and as many).
pub(super) fn count(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
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

impl OpenQuestion {
    /// A question's row as stored, read back.
    pub(super) fn stored(
        request_id: &str,
        conversation_id: i64,
        owner: String,
        kind: &str,
        remote_may_allow: bool,
    ) -> Result<OpenQuestion, StoreError> {
        let kind = QuestionKind::parse(kind).ok_or_else(|| StoreError::Corrupt(format!("question kind {kind}")))?;
        Ok(OpenQuestion { request_id: request_id.to_string(), conversation_id, owner, kind, remote_may_allow })
    }
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
    /// order, after those told before: heard as `Heard::Live`); nobody hears them on SQLite.
    fn tell_live(&self, conversation_id: i64, events: &[(u64, String)]) -> Result<(), StoreError>;

    /// Queues a job for the conversation's lease holder and tells it (`Notice::Job`): its id.
    fn queue_job(&self, conversation_id: i64, kind: JobKind) -> Result<i64, StoreError>;

    /// Takes the jobs queued for the conversation and not yet taken, in order, if `lease` is
    /// still held. A claim gives back those its former holder took and did not answer.
    fn take_jobs(&self, conversation_id: i64, lease: &Lease) -> Result<Vec<(i64, JobKind)>, StoreError>;

    /// Stores a job's answer (JSON) and tells the kernel that waits for it (`Notice::JobDone`).
    fn answer_job(&self, job_id: i64, answer: &str) -> Result<(), StoreError>;

    /// A job's answer once it has one (the job is gone then); `None` while it waits or runs.
    fn take_job_answer(&self, job_id: i64) -> Result<Option<String>, StoreError>;
}

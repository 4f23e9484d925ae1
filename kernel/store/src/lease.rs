//! Several kernels on one database: each conversation is run by the kernel holding its lease
//! (a row with the holder's kernel id, a generation and an expiry, renewed while the kernel
//! lives). A claim takes a free or expired lease and raises its generation; every commit of a
//! conversation's events names the generation it holds, so a kernel that lost its lease (it
//! stalled past the expiry and another took over) has its commits refused. A prompt submitted
//! through a kernel that does not hold the lease is queued in the database for the holder.

use superpi_proto::Message;

use super::{InterruptedTurn, StoreError};

/// A kernel's tenure of one conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The holding kernel's id (unique per kernel start).
    pub owner: String,
    /// Raised by every claim: a former holder's generation is refused at commit.
    pub generation: i64,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// This kernel holds the lease now. What the former holder left unfinished (turns running,
    /// or queued in its memory) is returned here for the holder to end (each end stored with
    /// the status `interrupted`; until then a later claim returns it again); prompts queued for
    /// the holder in the database are not among them.
    Taken { lease: Lease, interrupted: Vec<InterruptedTurn> },
    /// Another kernel holds a live lease.
    Held { owner: String },
}

/// A prompt another kernel queued for the lease holder (`session.submit` through it).
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedSubmit {
    pub turn_id: i64,
    pub prompt: Message,
    /// The submitter's ceiling (a mode's wire name).
    pub ceiling: String,
    pub steer: bool,
}

/// What a kernel hears from the others through the database (PostgreSQL's LISTEN/NOTIFY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// An event of the conversation was committed (by any kernel).
    Event { conversation_id: i64, seq: u64 },
    /// A prompt was queued for the conversation's lease holder.
    Submit { conversation_id: i64 },
    /// Someone asked the conversation's running turn to stop.
    Cancel { conversation_id: i64 },
    /// A person answered a question the conversation's holder asked (the answer is stored).
    Answer { conversation_id: i64 },
    /// The conversation's settings (mode, model, effort) were changed in the store, by a
    /// frontend that is `remote` or not (its ceiling is the `max_mode` of `mode_changed`).
    Settings { conversation_id: i64, remote: bool },
    /// Frontends of another kernel began or stopped watching the conversation.
    Watchers { conversation_id: i64 },
    /// A job (a compaction, a clear) was queued for the conversation's lease holder.
    Job { conversation_id: i64 },
    /// A job was answered: the kernels waiting for one look.
    JobDone,
    /// Notices may have been lost (the listening connection broke, or this kernel fell
    /// behind): look at everything again.
    Missed,
}

impl Notice {
    /// The payload on the `superpi` channel.
    pub fn payload(&self) -> String {
        match self {
            Notice::Event { conversation_id, seq } => format!("event {conversation_id} {seq}"),
            Notice::Submit { conversation_id } => format!("submit {conversation_id}"),
            Notice::Cancel { conversation_id } => format!("cancel {conversation_id}"),
            Notice::Answer { conversation_id } => format!("answer {conversation_id}"),
            Notice::Settings { conversation_id, remote: false } => format!("settings {conversation_id}"),
            Notice::Settings { conversation_id, remote: true } => format!("settings {conversation_id} remote"),
            Notice::Watchers { conversation_id } => format!("watchers {conversation_id}"),
            Notice::Job { conversation_id } => format!("job {conversation_id}"),
            Notice::JobDone => "jobdone".into(),
            Notice::Missed => "missed".into(),
        }
    }

    pub fn parse(payload: &str) -> Option<Notice> {
        let mut words = payload.split(' ');
        let kind = words.next()?;
        let conversation_id = words.next().and_then(|w| w.parse().ok());
        match kind {
            "event" => Some(Notice::Event { conversation_id: conversation_id?, seq: words.next()?.parse().ok()? }),
            "submit" => Some(Notice::Submit { conversation_id: conversation_id? }),
            "cancel" => Some(Notice::Cancel { conversation_id: conversation_id? }),
            "answer" => Some(Notice::Answer { conversation_id: conversation_id? }),
            "settings" => {
                Some(Notice::Settings { conversation_id: conversation_id?, remote: words.next() == Some("remote") })
            }
            "watchers" => Some(Notice::Watchers { conversation_id: conversation_id? }),
            "job" => Some(Notice::Job { conversation_id: conversation_id? }),
            "jobdone" => Some(Notice::JobDone),
            "missed" => Some(Notice::Missed),
            _ => None,
        }
    }
}

/// What a kernel hears from the others, in the order they said it: notices, and the deltas of
/// conversations they run (a commit's notice comes after the deltas before its event).
#[derive(Debug, Clone)]
pub enum Heard {
    Notice(Notice),
    Live(std::sync::Arc<super::LiveBatch>),
}

/// The leases and the queue of forwarded submits, on each engine.
pub trait Leases {
    /// Whether other kernels may share this database (PostgreSQL); SQLite's file is one
    /// kernel's (its data directory's lock), so at start every lease in it is stale.
    fn shared(&self) -> bool;

    /// Takes the conversation's lease for `kernel` for `ttl_ms` unless another kernel holds a
    /// live one; taking it returns what the former holder left unfinished, for the new holder
    /// to end.
    fn claim(&self, conversation_id: i64, kernel: &str, ttl_ms: i64) -> Result<Claim, StoreError>;

    /// Extends every lease `kernel` still holds by `ttl_ms`: those it holds, as (conversation,
    /// generation). A live conversation missing here was taken over: its kernel stops it.
    fn renew(&self, kernel: &str, ttl_ms: i64) -> Result<Vec<(i64, i64)>, StoreError>;

    /// Gives the lease up (the conversation left memory): true when prompts are queued for
    /// it meanwhile (whoever holds it next runs them).
    fn release(&self, conversation_id: i64, lease: &Lease) -> Result<bool, StoreError>;

    /// Gives every lease of `kernel` up (a clean stop).
    fn release_all(&self, kernel: &str) -> Result<(), StoreError>;

    /// Expires every lease (a single-kernel store at start: their holders are dead).
    fn expire_all(&self) -> Result<(), StoreError>;

    /// Conversations with work and no live lease: turns left running or queued, or prompts
    /// queued for a holder that is gone.
    fn orphans(&self) -> Result<Vec<i64>, StoreError>;

    /// Stores a prompt for the lease holder: its turn row (queued, with the prompt) and its
    /// place in the queue, in one transaction, and tells the holder. Returns the turn id.
    fn queue_submit(
        &self,
        conversation_id: i64,
        prompt: &Message,
        ceiling: &str,
        steer: bool,
    ) -> Result<i64, StoreError>;

    /// Takes the prompts queued for the conversation, in order, if `lease` is still held.
    fn take_queued(&self, conversation_id: i64, lease: &Lease) -> Result<Vec<QueuedSubmit>, StoreError>;

    /// Tells the other kernels (the lease holder: a cancel, a settings change).
    fn notify(&self, notice: Notice) -> Result<(), StoreError>;

    /// What other kernels say through the database; `None` when nobody else can (SQLite).
    fn notices(&self) -> Option<tokio::sync::broadcast::Receiver<Heard>>;
}

//! The durable store: everything the kernel keeps (conversations, entries, events, turns,
//! frontend sessions, "always" answers, the images of prompts, durable notes, schedules and their runs,
//! artifacts) behind one trait, [`Store`],
//! which the kernel names and nothing else. Two engines: SQLite in WAL mode
//! (`store/sqlite.rs`), the embedded default, and PostgreSQL (`store/postgres.rs`), a server
//! several kernels can share; [`open`] chooses.
//!
//! Every call is one short statement or transaction. Migrations are numbered files run at
//! open. Token deltas never reach this module. Several kernels share a database through
//! per-conversation leases (`store/lease.rs`), and pass what only a conversation's holder can
//! do to it (`store/forwarding.rs`).

/// The numbered migrations in one engine's dialect, read from its folder (relative to the
/// engine's file), in order: one list for both engines, so they are numbered alike. Append
/// only: a new migration is a file in each folder and a line here.
macro_rules! migrations_in {
    ($dir:literal) => {
        &[
            ("0001_init", include_str!(concat!($dir, "0001_init.sql"))),
            ("0002_permission_overrides", include_str!(concat!($dir, "0002_permission_overrides.sql"))),
            ("0003_turn_prompt", include_str!(concat!($dir, "0003_turn_prompt.sql"))),
            ("0004_turn_steered", include_str!(concat!($dir, "0004_turn_steered.sql"))),
            ("0005_leases", include_str!(concat!($dir, "0005_leases.sql"))),
            ("0006_images", include_str!(concat!($dir, "0006_images.sql"))),
            ("0007_forwarding", include_str!(concat!($dir, "0007_forwarding.sql"))),
            ("0008_cluster_relay", include_str!(concat!($dir, "0008_cluster_relay.sql"))),
            ("0009_memory", include_str!(concat!($dir, "0009_memory.sql"))),
            ("0010_schedules", include_str!(concat!($dir, "0010_schedules.sql"))),
            ("0011_trigger_deliveries", include_str!(concat!($dir, "0011_trigger_deliveries.sql"))),
            ("0012_schedule_modes", include_str!(concat!($dir, "0012_schedule_modes.sql"))),
            ("0013_memory_pins", include_str!(concat!($dir, "0013_memory_pins.sql"))),
            ("0014_scale_indexes", include_str!(concat!($dir, "0014_scale_indexes.sql"))),
            ("0015_daily_spend", include_str!(concat!($dir, "0015_daily_spend.sql"))),
            ("0016_artifacts", include_str!(concat!($dir, "0016_artifacts.sql"))),
        ]
    };
}

mod artifacts;
mod forwarding;
mod lease;
mod live;
mod memories;
mod postgres;
mod schedules;
mod sqlite;

use std::path::Path;
use std::sync::Arc;

pub use artifacts::{ArtifactRow, Artifacts, NewArtifact};
pub use forwarding::{Forwarding, JobKind, OpenQuestion, QuestionKind, Watchers};
pub use lease::{Claim, Heard, Lease, Leases, Notice, QueuedSubmit};
pub use live::LiveBatch;
pub use memories::{Memories, NewNote, Note, NoteLink, NoteScope, PinOutcome};
pub use postgres::PostgresStore;
pub use schedules::{DELIVERY_MEMORY_MS, NewSchedule, RunSettings, Schedule, ScheduleRun, Schedules};
pub use sqlite::SqliteStore;

use superpi_proto::event::now_ms;
use superpi_proto::{Entry, EntryKind, Message};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("database error: {0}")]
    Postgres(String),
    #[error("database connection: {0}")]
    Config(String),
    #[error("this kernel no longer holds conversation {0}'s lease: another kernel took it over")]
    Fenced(i64),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("the database was written by a newer superpi (schema {found}, this build knows {known})")]
    TooNew { found: usize, known: usize },
}

/// A conversation's stored row.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationRow {
    pub id: i64,
    pub owner: String,
    pub harness: String,
    pub model: String,
    pub mode: String,
    pub workspace: Option<String>,
    pub title: Option<String>,
    pub parent_id: Option<i64>,
    pub created_at_ms: i64,
    pub settings: ConversationSettings,
}

/// A row of [`Store::list_conversations`]: the conversation, its place in the list's order,
/// and what a listing shows of its events, read with the page (not a query per row).
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub row: ConversationRow,
    pub updated_at_ms: i64,
    /// Its highest stored seq, as [`Store::head_seq`] says.
    pub head_seq: u64,
    /// The wire JSON of its last stored `usage_updated`, if any.
    pub last_usage: Option<String>,
}

/// Where a page of [`Store::list_conversations`] starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFrom {
    /// Skip this many of the latest.
    Offset(u32),
    /// The conversations after this one in the list's order (its `updated_at_ms` and id).
    After { updated_at_ms: i64, id: i64 },
}

/// A conversation's settings beyond its own columns: the JSON of its `settings` column. A
/// value this build cannot read is left out (a newer kernel's), never an error.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConversationSettings {
    /// The thinking effort of its model requests (none: the provider settings' default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<superpi_proto::Effort>,
    /// The tools it may use at most (a subagent's: its parent's loadout when it started);
    /// none: its harness decides alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_limit: Option<Vec<String>>,
    /// Directories its tools may write besides the workspace (an editor's
    /// `additionalDirectories`), canonical, each checked as a workspace is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_dirs: Vec<String>,
    /// Instructions a frontend gave it, appended after its harness's system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The highest mode it may take, when lower than its harness's: a hand-off keeps the
    /// ceiling of the harness it left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_ceiling: Option<String>,
}

/// What [`Store::delete_conversation`] runs, in one transaction, with the id as `$1`: the rows
/// that refer to the conversation first, the conversation last (both engines read `$1`).
pub(crate) const DELETE_CONVERSATION: &[&str] = &[
    "DELETE FROM queued_submits WHERE conversation_id = $1",
    "DELETE FROM forwarded_jobs WHERE conversation_id = $1",
    "DELETE FROM open_questions WHERE conversation_id = $1",
    "DELETE FROM remote_watchers WHERE conversation_id = $1",
    "DELETE FROM conversation_leases WHERE conversation_id = $1",
    "DELETE FROM permission_overrides WHERE conversation_id = $1",
    "DELETE FROM frontend_sessions WHERE conversation_id = $1",
    "DELETE FROM schedules WHERE conversation_id = $1",
    "DELETE FROM artifacts WHERE conversation_id = $1",
    "UPDATE memories SET conversation_id = NULL WHERE conversation_id = $1",
    "UPDATE conversations SET parent_id = NULL WHERE parent_id = $1",
    "DELETE FROM events WHERE conversation_id = $1",
    "DELETE FROM entries WHERE conversation_id = $1",
    "DELETE FROM turns WHERE conversation_id = $1",
    "DELETE FROM conversations WHERE id = $1",
];

impl ConversationSettings {
    /// Reads the column; what does not parse is left at its default.
    pub fn from_column(json: &str) -> Self {
        let value: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
        let field = |name: &str| value.get(name).cloned().unwrap_or_default();
        ConversationSettings {
            effort: serde_json::from_value(field("effort")).ok().flatten(),
            tool_limit: serde_json::from_value(field("tool_limit")).ok().flatten(),
            extra_dirs: serde_json::from_value(field("extra_dirs")).unwrap_or_default(),
            system_prompt: serde_json::from_value(field("system_prompt")).ok().flatten(),
            mode_ceiling: serde_json::from_value(field("mode_ceiling")).ok().flatten(),
        }
    }

    pub fn to_column(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }
}

/// The fields of a new conversation.
#[derive(Debug, Clone, Default)]
pub struct NewConversation {
    pub owner: String,
    pub harness: String,
    pub model: String,
    pub mode: String,
    pub workspace: Option<String>,
    pub title: Option<String>,
    /// The conversation that started this one (a subagent's parent).
    pub parent_id: Option<i64>,
    pub settings: ConversationSettings,
}

/// An event to commit, with the entry it carries when it is a message or a tool result, and
/// the turn status it sets (a turn's start and end are written with their event).
pub struct Commit<'a> {
    pub conversation_id: i64,
    pub seq: u64,
    pub event_type: &'a str,
    pub wire: &'a str,
    pub entry: Option<(EntryKind, Option<i64>, &'a Message)>,
    pub turn_status: Option<TurnStatus<'a>>,
    /// The lease the committing kernel holds: refused (`Fenced`) once another kernel took the
    /// conversation over. `None` commits without the check (tests of the store alone).
    pub lease: Option<&'a Lease>,
    /// Deltas published before the event and not yet told to the other kernels' watchers: told
    /// with it (before it), so they hear every delta before the event that follows it.
    pub live: &'a [(u64, String)],
}

/// A turn's new status, and the error that ended it.
#[derive(Debug, Clone, Copy)]
pub struct TurnStatus<'a> {
    pub turn_id: i64,
    pub status: &'a str,
    pub error: Option<&'a str>,
}

/// A turn a dead kernel left running or queued, as a claim finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct InterruptedTurn {
    pub conversation_id: i64,
    pub turn_id: i64,
    /// Its prompt when it never started (still queued): not yet in the history.
    pub unstarted_prompt: Option<Message>,
}

/// What the kernel stores and reads, whatever the engine. Every method is one short
/// statement or transaction; a write has happened when it returns `Ok`.
pub trait Store: Leases + Forwarding + Memories + Schedules + Artifacts + Send + Sync {
    /// The schema version (number of migrations applied).
    fn schema_version(&self) -> Result<usize, StoreError>;

    fn create_conversation(&self, new: &NewConversation) -> Result<ConversationRow, StoreError>;

    fn conversation(&self, id: i64) -> Result<Option<ConversationRow>, StoreError>;

    /// The principal's conversations, most recently updated first (ties: the higher id
    /// first), each with its `updated_at_ms`, head seq and last `usage_updated`, in one query:
    /// from the start skipping `offset`, or after a position of that order
    /// (`ListFrom::After`, read straight from the index however deep).
    fn list_conversations(&self, owner: &str, limit: u32, from: ListFrom) -> Result<Vec<Listed>, StoreError>;

    fn set_mode(&self, id: i64, mode: &str) -> Result<(), StoreError>;

    fn set_model(&self, id: i64, model: &str) -> Result<(), StoreError>;

    fn set_settings(&self, id: i64, settings: &ConversationSettings) -> Result<(), StoreError>;

    /// A hand-off: the conversation's harness, mode, model and settings, in one statement.
    fn set_harness(
        &self,
        id: i64,
        harness: &str,
        mode_model: (&str, &str),
        settings: &ConversationSettings,
    ) -> Result<(), StoreError>;

    /// Adds `usd` to what `owner` spent on `day` (days since the epoch, UTC) and returns the
    /// day's total; every kernel on the database adds to the same figure.
    fn add_daily_spend(&self, owner: &str, day: i64, usd: f64) -> Result<f64, StoreError>;

    /// What `owner` spent on `day`.
    fn daily_spend(&self, owner: &str, day: i64) -> Result<f64, StoreError>;

    /// Deletes a conversation and all it holds (entries, events, turns, its schedules, its
    /// frontend keys): false when there was none. Its forks and memories stay, unlinked.
    fn delete_conversation(&self, id: i64) -> Result<bool, StoreError>;

    /// The stored "always" answers of a conversation (the JSON of the policy's `Overrides`).
    fn permission_overrides(&self, id: i64) -> Result<Option<String>, StoreError>;

    fn set_permission_overrides(&self, id: i64, json: &str) -> Result<(), StoreError>;

    /// Sets the title unless the conversation has one.
    fn set_title(&self, id: i64, title: &str) -> Result<(), StoreError>;

    fn find_external(&self, frontend: &str, principal: &str, external_id: &str) -> Result<Option<i64>, StoreError>;

    /// Maps a frontend's own session key (per principal) to a conversation, replacing any
    /// earlier mapping of that key.
    fn bind_external(
        &self,
        frontend: &str,
        principal: &str,
        external_id: &str,
        conversation_id: i64,
    ) -> Result<(), StoreError>;

    /// The highest stored seq of a conversation (0 when none).
    fn head_seq(&self, conversation_id: i64) -> Result<u64, StoreError>;

    /// Commits an event (and its entry, and the turn status it sets) in one transaction. A
    /// seq is committed once: a duplicate is refused, not overwritten.
    fn commit(&self, c: &Commit<'_>) -> Result<(), StoreError>;

    /// Stored events with `after < seq <= up_to`, as wire JSON, in order: at most `max_events`,
    /// and no more once `max_bytes` are read (always one when any is left).
    fn events_page(
        &self,
        conversation_id: i64,
        after: u64,
        up_to: u64,
        max_events: usize,
        max_bytes: usize,
    ) -> Result<Vec<(u64, String)>, StoreError>;

    /// The latest stored events of one type (`plan_updated`, ...), as wire JSON, latest first:
    /// at most `most`.
    fn latest_events(
        &self,
        conversation_id: i64,
        event_type: &str,
        most: usize,
    ) -> Result<Vec<(u64, String)>, StoreError>;

    /// A conversation's entries in seq order.
    fn entries(&self, conversation_id: i64) -> Result<Vec<Entry>, StoreError> {
        Ok(self.entries_page(conversation_id, 0, usize::MAX, usize::MAX)?.0)
    }

    /// A page of a conversation's entries with a seq after `after`: at most `max_entries`, and
    /// no more once `max_bytes` of them are read (always one when any is left). True when more
    /// follow.
    fn entries_page(
        &self,
        conversation_id: i64,
        after: u64,
        max_entries: usize,
        max_bytes: usize,
    ) -> Result<(Vec<Entry>, bool), StoreError>;

    /// Stores a queued turn with its prompt, in one statement: once this returns, the prompt
    /// survives any kill.
    fn create_turn(&self, conversation_id: i64, prompt: &Message) -> Result<i64, StoreError>;

    fn set_turn_status(&self, turn_id: i64, status: &str, error: Option<&str>) -> Result<(), StoreError>;

    fn turn_status(&self, turn_id: i64) -> Result<Option<String>, StoreError>;

    /// A turn's status and the error that ended it, when it did.
    fn turn_outcome(&self, turn_id: i64) -> Result<Option<(String, Option<String>)>, StoreError>;

    /// A new conversation owned by `owner` holding the entries and stored events of `source`
    /// up to `at_seq` (all when `None`).
    fn fork(&self, source: &ConversationRow, owner: &str, at_seq: Option<u64>) -> Result<ConversationRow, StoreError>;

    /// Stores an image's bytes under their SHA-256 (hex), once: a digest already stored keeps
    /// what it has (the same bytes).
    fn put_image(&self, sha256: &str, media_type: &str, bytes: &[u8]) -> Result<(), StoreError>;

    /// An image's bytes by their SHA-256.
    fn image(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// The last step of a clean stop: leaves nothing the next open must recover (SQLite folds
    /// its write-ahead log into the database).
    fn checkpoint(&self) -> Result<(), StoreError>;
}

/// The kernel's store: the PostgreSQL database a connection string names, else the SQLite
/// file at `sqlite_path`.
pub fn open(database_url: Option<&str>, sqlite_path: &Path) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match database_url {
        Some(url) => Arc::new(PostgresStore::connect(url)?),
        None => Arc::new(SqliteStore::open(sqlite_path)?),
    })
}

/// The statement of a [`Store::list_conversations`] page: `page` (a select of the
/// conversation's columns and `updated_at_ms`, ordered and limited), then each row's head seq
/// and last `usage_updated` from the (conversation_id, seq) keys. `greatest` is the engine's
/// name for the larger of two values.
fn listed_page(page: &str, greatest: &str) -> String {
    format!(
        "SELECT c.*,
                {greatest}((SELECT COALESCE(MAX(seq), 0) FROM events WHERE conversation_id = c.id),
                           (SELECT COALESCE(MAX(seq), 0) FROM entries WHERE conversation_id = c.id)),
                (SELECT wire FROM events WHERE conversation_id = c.id AND type = 'usage_updated'
                 ORDER BY seq DESC LIMIT 1)
         FROM ({page}) c ORDER BY c.updated_at_ms DESC, c.id DESC"
    )
}

/// When a turn with this status ended: now for a final status, none while it may still run.
fn ended_at_ms(status: &str) -> Option<i64> {
    matches!(status, "completed" | "error" | "cancelled" | "interrupted" | "steered").then(now_ms)
}

/// A stored event's wire JSON addressed to another conversation (a fork's copy).
fn readdress(wire: &str, conversation_id: i64) -> Option<String> {
    let mut value: serde_json::Value = serde_json::from_str(wire).ok()?;
    value.as_object_mut()?.insert("conversation_id".into(), conversation_id.into());
    serde_json::to_string(&value).ok()
}

/// A turn a claim interrupted, from its stored status and prompt: a queued one never started,
/// so its prompt is not yet in the history.
fn interrupted_turn(
    conversation_id: i64,
    turn_id: i64,
    status: &str,
    prompt: Option<String>,
) -> Result<InterruptedTurn, StoreError> {
    let unstarted_prompt = match (status, prompt) {
        ("queued", Some(json)) => Some(stored_prompt(turn_id, &json)?),
        _ => None,
    };
    Ok(InterruptedTurn { conversation_id, turn_id, unstarted_prompt })
}

/// The JSON of a turn's prompt as stored, read back.
fn stored_prompt(turn_id: i64, json: &str) -> Result<Message, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt(format!("the prompt of turn {turn_id}: {e}")))
}

fn to_json(message: &Message) -> Result<String, StoreError> {
    serde_json::to_string(message).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Stored events, read in seq order, as a page: no more once `max_bytes` are read (always one
/// when any is left). Each engine reads its rows; the page is cut here.
fn events_page_of<E>(
    rows: impl IntoIterator<Item = Result<(u64, String), E>>,
    max_bytes: usize,
) -> Result<Vec<(u64, String)>, StoreError>
where
    StoreError: From<E>,
{
    let mut page = Vec::new();
    let mut bytes = 0;
    for row in rows {
        let (seq, wire) = row?;
        bytes += wire.len();
        page.push((seq, wire));
        if bytes >= max_bytes {
            break;
        }
    }
    Ok(page)
}

/// An entry's row as stored: seq, kind, turn, message JSON, time.
type EntryRow = (i64, String, Option<i64>, String, i64);

/// Stored entries, read in seq order, as a page: at most `max_entries`, no more once
/// `max_bytes` are read (always one when any is left), and whether more follow.
fn entries_page_of<E>(
    rows: impl IntoIterator<Item = Result<EntryRow, E>>,
    max_entries: usize,
    max_bytes: usize,
) -> Result<(Vec<Entry>, bool), StoreError>
where
    StoreError: From<E>,
{
    let mut out = Vec::new();
    let mut bytes = 0;
    for row in rows {
        if out.len() >= max_entries || (bytes >= max_bytes && !out.is_empty()) {
            return Ok((out, true));
        }
        let (seq, kind, turn_id, message, created_at_ms) = row?;
        bytes += message.len();
        out.push(stored_entry(seq, &kind, turn_id, &message, created_at_ms)?);
    }
    Ok((out, false))
}

/// An entry as stored (seq, kind, turn, message JSON, time), read back.
fn stored_entry(
    seq: i64,
    kind: &str,
    turn_id: Option<i64>,
    message: &str,
    created_at_ms: i64,
) -> Result<Entry, StoreError> {
    let kind = EntryKind::parse(kind).ok_or_else(|| StoreError::Corrupt(format!("entry kind {kind}")))?;
    let message: Message =
        serde_json::from_str(message).map_err(|e| StoreError::Corrupt(format!("entry {seq}: {e}")))?;
    Ok(Entry { seq: seq as u64, kind, turn_id, message, created_at_ms })
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "../testing/postgres_server.rs"]
#[allow(clippy::disallowed_methods, clippy::expect_used)] // a test server: spawns, fails loudly
pub(crate) mod test_postgres;

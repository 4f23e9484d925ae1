//! Durable memory in the store: notes that outlive the conversation that wrote them, scoped
//! to an owner (a principal) and optionally a workspace, linked to each other, found by
//! full-text search (SQLite's FTS5, PostgreSQL's tsvector). Notes are never edited: a
//! correction is a new note that `supersedes` the old one, which then ranks below it. A note
//! without a workspace is global (it holds in every workspace of its owner); a pinned note
//! comes first in searches and in the index.

use super::StoreError;

/// A note to write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewNote {
    pub owner: String,
    /// Set for a note that holds only in this workspace; `None`: everywhere its owner works.
    pub workspace: Option<String>,
    pub title: String,
    pub body: String,
    /// Words without spaces.
    pub tags: Vec<String>,
    /// Where it came from (a URL, "compaction of conversation 12").
    pub source: Option<String>,
    /// The conversation that wrote it.
    pub conversation_id: Option<i64>,
    /// First in searches and always in the index.
    pub pinned: bool,
}

/// A stored note.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub id: i64,
    pub owner: String,
    pub workspace: Option<String>,
    pub title: String,
    pub body: String,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub conversation_id: Option<i64>,
    pub created_at_ms: i64,
    pub pinned: bool,
    /// A newer note supersedes it.
    pub superseded: bool,
}

/// Whose notes a call sees: the owner's that hold everywhere, and those of this workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoteScope<'a> {
    pub owner: &'a str,
    pub workspace: Option<&'a str>,
}

/// `from` relates to `to` (`supersedes`, `supports`, `contradicts`, `related`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteLink {
    pub from_id: i64,
    pub to_id: i64,
    pub relation: String,
}

/// What [`Memories::pin_note`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinOutcome {
    /// The note is pinned or unpinned as asked (it may have been already).
    Done,
    /// The owner has no such note.
    NoNote,
    /// Not pinned: the owner has as many pinned notes as they may.
    Full,
}

pub trait Memories {
    /// Stores a note as given (pinned or not, whatever the owner has pinned); its id.
    fn write_note(&self, note: &NewNote) -> Result<i64, StoreError>;

    /// Stores a note as [`Memories::write_note`] does, except that a pinned note is refused
    /// (`None`) when its owner has `max_pinned` pinned already: counted and written in one
    /// transaction, so writers at once never leave more.
    fn write_note_within(&self, note: &NewNote, max_pinned: usize) -> Result<Option<i64>, StoreError>;

    /// The note with this id, when the scope sees it.
    fn note(&self, scope: NoteScope<'_>, id: i64) -> Result<Option<Note>, StoreError>;

    /// The links from and to a note.
    fn note_links(&self, id: i64) -> Result<Vec<NoteLink>, StoreError>;

    /// Stores a link; false when it was there already.
    fn link_notes(&self, link: &NoteLink) -> Result<bool, StoreError>;

    /// The notes matching any of `terms` (plain words), best first: pinned notes, then the
    /// others, superseded ones after them, each by the engine's relevance (higher is better),
    /// then newest.
    fn search_notes(
        &self,
        scope: NoteScope<'_>,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<(Note, f64)>, StoreError>;

    /// The pinned notes and the newest that no note supersedes: pinned first, then newest
    /// first.
    fn recent_notes(&self, scope: NoteScope<'_>, limit: usize) -> Result<Vec<Note>, StoreError>;

    /// Every note of an owner, in every workspace: pinned first, then newest first.
    fn owner_notes(&self, owner: &str, limit: usize) -> Result<Vec<Note>, StoreError>;

    /// Pins or unpins an owner's note, pinning only while the owner has fewer than
    /// `max_pinned` pinned notes: counted and changed in one transaction, so pins at once
    /// (two conversations, a tool and the CLI) never leave more.
    fn pin_note(&self, owner: &str, id: i64, pinned: bool, max_pinned: usize) -> Result<PinOutcome, StoreError>;

    /// Removes an owner's note and its links; false when the owner has no such note.
    fn remove_note(&self, owner: &str, id: i64) -> Result<bool, StoreError>;

    /// How many notes the scope sees.
    fn count_notes(&self, scope: NoteScope<'_>) -> Result<u64, StoreError>;

    /// The search engine that answers (`fts5`, `tsvector`).
    fn search_engine(&self) -> &'static str;
}

/// Tags as stored: one space-separated column.
pub(super) fn tags_column(tags: &[String]) -> String {
    tags.join(" ")
}

pub(super) fn tags_of(column: &str) -> Vec<String> {
    column.split_whitespace().map(str::to_string).collect()
}

/// The columns every read selects, in this order (then `superseded`).
pub(super) const NOTE_COLUMNS: &str =
    "m.id, m.owner, m.workspace, m.title, m.body, m.tags, m.source, m.conversation_id, m.created_at_ms, m.pinned";

/// Whether a newer note supersedes `m`, as a column.
pub(super) const SUPERSEDED: &str =
    "EXISTS (SELECT 1 FROM memory_links l WHERE l.to_id = m.id AND l.relation = 'supersedes')";

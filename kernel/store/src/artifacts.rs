//! Artifacts in the store: files a turn's `artifact` tool wrote for the person, keyed by their
//! conversation and name, bytes and all, so that every kernel on a shared database lists and
//! serves them whichever kernel ran the turn. The kernel bounds their size and names them; the
//! store bounds how many a conversation keeps, in the write's own transaction.

use super::StoreError;

/// An artifact to store (or to replace, by its name).
#[derive(Debug, Clone, Copy)]
pub struct NewArtifact<'a> {
    pub conversation_id: i64,
    pub name: &'a str,
    pub media_type: &'a str,
    pub bytes: &'a [u8],
    pub created_at_ms: i64,
}

/// A stored artifact, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRow {
    pub conversation_id: i64,
    pub name: String,
    pub media_type: String,
    /// Its length in bytes.
    pub size: u64,
    pub created_at_ms: i64,
}

/// The columns of an [`ArtifactRow`], in its fields' order.
pub(crate) const ARTIFACT_COLUMNS: &str = "a.conversation_id, a.name, a.media_type, a.size, a.created_at_ms";

pub trait Artifacts {
    /// Stores an artifact, replacing one of its name: `None` (nothing written) when its
    /// conversation already keeps `most` others.
    fn put_artifact(&self, new: &NewArtifact<'_>, most: usize) -> Result<Option<ArtifactRow>, StoreError>;

    /// One artifact with its bytes.
    fn artifact(&self, conversation_id: i64, name: &str) -> Result<Option<(ArtifactRow, Vec<u8>)>, StoreError>;

    /// The artifacts of `owner`'s conversations (of one of them, when given), newest first,
    /// then by name.
    fn artifacts(&self, owner: &str, conversation_id: Option<i64>) -> Result<Vec<ArtifactRow>, StoreError>;
}

/// The row a stored [`NewArtifact`] reads back as.
pub(crate) fn row_of(new: &NewArtifact<'_>) -> ArtifactRow {
    ArtifactRow {
        conversation_id: new.conversation_id,
        name: new.name.to_string(),
        media_type: new.media_type.to_string(),
        size: new.bytes.len() as u64,
        created_at_ms: new.created_at_ms,
    }
}

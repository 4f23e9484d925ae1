//! Artifacts on SQLite: `artifacts`, one row a conversation's file, its bytes a BLOB. The one
//! connection serialises writes, so a count and its insert see the same rows.

use rusqlite::{OptionalExtension, Row, params};

use crate::StoreError;
use crate::artifacts::{ARTIFACT_COLUMNS, ArtifactRow, Artifacts, NewArtifact};
use crate::sqlite::SqliteStore;

fn to_row(row: &Row<'_>) -> rusqlite::Result<ArtifactRow> {
    Ok(ArtifactRow {
        conversation_id: row.get(0)?,
        name: row.get(1)?,
        media_type: row.get(2)?,
        size: row.get::<_, i64>(3)? as u64,
        created_at_ms: row.get(4)?,
    })
}

impl Artifacts for SqliteStore {
    fn put_artifact(&self, new: &NewArtifact<'_>, most: usize) -> Result<Option<ArtifactRow>, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let others: i64 = tx
            .prepare_cached("SELECT count(*) FROM artifacts WHERE conversation_id = ?1 AND name <> ?2")?
            .query_row(params![new.conversation_id, new.name], |r| r.get(0))?;
        if others as usize >= most {
            return Ok(None);
        }
        tx.prepare_cached(
            "INSERT INTO artifacts (conversation_id, name, media_type, size, bytes, created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (conversation_id, name) DO UPDATE SET media_type = excluded.media_type,
                 size = excluded.size, bytes = excluded.bytes, created_at_ms = excluded.created_at_ms",
        )?
        .execute(params![
            new.conversation_id,
            new.name,
            new.media_type,
            new.bytes.len() as i64,
            new.bytes,
            new.created_at_ms
        ])?;
        tx.commit()?;
        Ok(Some(crate::artifacts::row_of(new)))
    }

    fn artifact(&self, conversation_id: i64, name: &str) -> Result<Option<(ArtifactRow, Vec<u8>)>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached(&format!(
                "SELECT {ARTIFACT_COLUMNS}, a.bytes FROM artifacts a WHERE a.conversation_id = ?1 AND a.name = ?2"
            ))?
            .query_row(params![conversation_id, name], |r| Ok((to_row(r)?, r.get(5)?)))
            .optional()?)
    }

    fn artifacts(&self, owner: &str, conversation_id: Option<i64>) -> Result<Vec<ArtifactRow>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {ARTIFACT_COLUMNS} FROM artifacts a JOIN conversations c ON c.id = a.conversation_id
             WHERE c.owner = ?1 AND (?2 IS NULL OR a.conversation_id = ?2)
             ORDER BY a.created_at_ms DESC, a.name"
        ))?;
        let rows = stmt.query_map(params![owner, conversation_id], to_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

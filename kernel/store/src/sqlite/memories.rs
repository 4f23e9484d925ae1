//! Memory on SQLite: the notes in `memories`, searched through the FTS5 table its triggers
//! keep (bm25, the title weighted above tags and body).

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use superpi_proto::event::now_ms;

use crate::StoreError;
use crate::memories::{
    Memories, NOTE_COLUMNS, NewNote, Note, NoteLink, NoteScope, PinOutcome, SUPERSEDED, tags_column, tags_of,
};
use crate::sqlite::SqliteStore;

const IN_SCOPE: &str = "m.owner = ?1 AND (m.workspace IS NULL OR m.workspace IS ?2)";

fn to_note(row: &Row<'_>) -> rusqlite::Result<Note> {
    let tags: String = row.get(5)?;
    Ok(Note {
        id: row.get(0)?,
        owner: row.get(1)?,
        workspace: row.get(2)?,
        title: row.get(3)?,
        body: row.get(4)?,
        tags: tags_of(&tags),
        source: row.get(6)?,
        conversation_id: row.get(7)?,
        created_at_ms: row.get(8)?,
        pinned: row.get(9)?,
        superseded: row.get(10)?,
    })
}

/// An FTS5 query matching any of the words: each quoted, so none is read as syntax.
fn match_any(terms: &[String]) -> String {
    terms.iter().map(|t| format!("\"{}\"", t.replace('"', ""))).collect::<Vec<_>>().join(" OR ")
}

fn insert(conn: &Connection, note: &NewNote) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO memories (owner, workspace, title, body, tags, source, conversation_id, created_at_ms, pinned)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        note.owner,
        note.workspace,
        note.title,
        note.body,
        tags_column(&note.tags),
        note.source,
        note.conversation_id,
        now_ms(),
        note.pinned
    ])?;
    Ok(conn.last_insert_rowid())
}

fn pinned_count(conn: &Connection, owner: &str) -> Result<usize, StoreError> {
    let n: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM memories WHERE owner = ?1 AND pinned")?
        .query_row([owner], |r| r.get(0))?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

impl Memories for SqliteStore {
    fn write_note(&self, note: &NewNote) -> Result<i64, StoreError> {
        insert(&self.conn(), note)
    }

    fn write_note_within(&self, note: &NewNote, max_pinned: usize) -> Result<Option<i64>, StoreError> {
        let mut conn = self.conn();
        // Immediate: the write lock first, so no other writer counts between the count and
        // the insert (another kernel on the same file included).
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if note.pinned && pinned_count(&tx, &note.owner)? >= max_pinned {
            return Ok(None);
        }
        let id = insert(&tx, note)?;
        tx.commit()?;
        Ok(Some(id))
    }

    fn note(&self, scope: NoteScope<'_>, id: i64) -> Result<Option<Note>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                &format!("SELECT {NOTE_COLUMNS}, {SUPERSEDED} FROM memories m WHERE {IN_SCOPE} AND m.id = ?3"),
                params![scope.owner, scope.workspace, id],
                to_note,
            )
            .optional()?)
    }

    fn note_links(&self, id: i64) -> Result<Vec<NoteLink>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT from_id, to_id, relation FROM memory_links WHERE from_id = ?1 OR to_id = ?1
             ORDER BY created_at_ms, from_id, to_id",
        )?;
        let links = stmt
            .query_map([id], |r| Ok(NoteLink { from_id: r.get(0)?, to_id: r.get(1)?, relation: r.get(2)? }))?
            .collect::<Result<_, _>>()?;
        Ok(links)
    }

    fn link_notes(&self, link: &NoteLink) -> Result<bool, StoreError> {
        let added = self
            .conn()
            .prepare_cached(
                "INSERT INTO memory_links (from_id, to_id, relation, created_at_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT DO NOTHING",
            )?
            .execute(params![link.from_id, link.to_id, link.relation, now_ms()])?;
        Ok(added > 0)
    }

    fn search_notes(
        &self,
        scope: NoteScope<'_>,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<(Note, f64)>, StoreError> {
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {NOTE_COLUMNS}, {SUPERSEDED} AS superseded, -bm25(memories_fts, 10.0, 1.0, 5.0) AS score
             FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
             WHERE memories_fts MATCH ?3 AND {IN_SCOPE}
             ORDER BY m.pinned DESC, superseded, score DESC, m.id DESC LIMIT ?4"
        ))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let hits = stmt
            .query_map(params![scope.owner, scope.workspace, match_any(terms), limit], |r| {
                Ok((to_note(r)?, r.get::<_, f64>(11)?))
            })?
            .collect::<Result<_, _>>()?;
        Ok(hits)
    }

    fn recent_notes(&self, scope: NoteScope<'_>, limit: usize) -> Result<Vec<Note>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {NOTE_COLUMNS}, {SUPERSEDED} FROM memories m WHERE {IN_SCOPE} AND (m.pinned OR NOT {SUPERSEDED})
             ORDER BY m.pinned DESC, m.created_at_ms DESC, m.id DESC LIMIT ?3"
        ))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let notes = stmt.query_map(params![scope.owner, scope.workspace, limit], to_note)?.collect::<Result<_, _>>()?;
        Ok(notes)
    }

    fn owner_notes(&self, owner: &str, limit: usize) -> Result<Vec<Note>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {NOTE_COLUMNS}, {SUPERSEDED} FROM memories m WHERE m.owner = ?1
             ORDER BY m.pinned DESC, m.created_at_ms DESC, m.id DESC LIMIT ?2"
        ))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let notes = stmt.query_map(params![owner, limit], to_note)?.collect::<Result<_, _>>()?;
        Ok(notes)
    }

    fn pin_note(&self, owner: &str, id: i64, pinned: bool, max_pinned: usize) -> Result<PinOutcome, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let was: Option<bool> = tx
            .prepare_cached("SELECT pinned FROM memories WHERE owner = ?1 AND id = ?2")?
            .query_row(params![owner, id], |r| r.get(0))
            .optional()?;
        let outcome = match was {
            None => PinOutcome::NoNote,
            Some(false) if pinned && pinned_count(&tx, owner)? >= max_pinned => PinOutcome::Full,
            Some(_) => {
                tx.prepare_cached("UPDATE memories SET pinned = ?2 WHERE id = ?1")?.execute(params![id, pinned])?;
                PinOutcome::Done
            }
        };
        tx.commit()?;
        Ok(outcome)
    }

    fn remove_note(&self, owner: &str, id: i64) -> Result<bool, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let owned: bool = tx
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM memories WHERE owner = ?1 AND id = ?2)")?
            .query_row(params![owner, id], |r| r.get(0))?;
        if owned {
            tx.prepare_cached("DELETE FROM memory_links WHERE from_id = ?1 OR to_id = ?1")?.execute([id])?;
            tx.prepare_cached("DELETE FROM memories WHERE id = ?1")?.execute([id])?;
        }
        tx.commit()?;
        Ok(owned)
    }

    fn count_notes(&self, scope: NoteScope<'_>) -> Result<u64, StoreError> {
        let n: i64 = self.conn().query_row(
            &format!("SELECT COUNT(*) FROM memories m WHERE {IN_SCOPE}"),
            params![scope.owner, scope.workspace],
            |r| r.get(0),
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn search_engine(&self) -> &'static str {
        "fts5"
    }
}

//! Memory on PostgreSQL: the notes in `memories`, searched through its generated tsvector
//! (the `english` configuration, title weighted above tags and body; ranked by `ts_rank`).

use superpi_proto::event::now_ms;
use tokio_postgres::{GenericClient, Row, Transaction};

use crate::StoreError;
use crate::memories::{
    Memories, NOTE_COLUMNS, NewNote, Note, NoteLink, NoteScope, PinOutcome, SUPERSEDED, tags_column, tags_of,
};
use crate::postgres::PostgresStore;
use crate::postgres::connection::wait;

const IN_SCOPE: &str = "m.owner = $1 AND (m.workspace IS NULL OR m.workspace IS NOT DISTINCT FROM $2)";

fn to_note(row: &Row) -> Result<Note, StoreError> {
    let tags: String = row.try_get(5)?;
    Ok(Note {
        id: row.try_get(0)?,
        owner: row.try_get(1)?,
        workspace: row.try_get(2)?,
        title: row.try_get(3)?,
        body: row.try_get(4)?,
        tags: tags_of(&tags),
        source: row.try_get(6)?,
        conversation_id: row.try_get(7)?,
        created_at_ms: row.try_get(8)?,
        pinned: row.try_get(9)?,
        superseded: row.try_get(10)?,
    })
}

/// A tsquery matching any of the words. The kernel passes words of letters and digits only;
/// anything else is dropped here too, so nothing is read as tsquery syntax.
fn match_any(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| t.chars().filter(|c| c.is_alphanumeric()).collect::<String>())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Stores a note (in a transaction or not); its id.
async fn insert(client: &impl GenericClient, note: &NewNote) -> Result<i64, StoreError> {
    let row = client
        .query_one(
            "INSERT INTO memories (owner, workspace, title, body, tags, source, conversation_id, created_at_ms, pinned)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
            &[
                &note.owner,
                &note.workspace,
                &note.title,
                &note.body,
                &tags_column(&note.tags),
                &note.source,
                &note.conversation_id,
                &now_ms(),
                &note.pinned,
            ],
        )
        .await?;
    Ok(row.try_get(0)?)
}

/// The advisory locks' first key for an owner's pins (the second is the owner's hash): two
/// transactions counting one owner's pins take turns, so neither counts before the other's
/// pin is committed. Distinct from the migration lock's single key.
const PINS_LOCK: i32 = 0x5350_494e;

/// How many notes the owner has pinned, counted under the owner's pins lock (held until
/// `tx` ends).
async fn pinned_count(tx: &Transaction<'_>, owner: &str) -> Result<usize, StoreError> {
    tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&PINS_LOCK, &owner]).await?;
    let row = tx.query_one("SELECT COUNT(*) FROM memories WHERE owner = $1 AND pinned", &[&owner]).await?;
    Ok(usize::try_from(row.try_get::<_, i64>(0)?).unwrap_or(usize::MAX))
}

impl Memories for PostgresStore {
    fn write_note(&self, note: &NewNote) -> Result<i64, StoreError> {
        let client = self.client()?;
        wait(insert(&**client, note))
    }

    fn write_note_within(&self, note: &NewNote, max_pinned: usize) -> Result<Option<i64>, StoreError> {
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            if note.pinned && pinned_count(&tx, &note.owner).await? >= max_pinned {
                return Ok(None);
            }
            let id = insert(&tx, note).await?;
            tx.commit().await?;
            Ok(Some(id))
        })
    }

    fn note(&self, scope: NoteScope<'_>, id: i64) -> Result<Option<Note>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            &format!("SELECT {NOTE_COLUMNS}, {SUPERSEDED} FROM memories m WHERE {IN_SCOPE} AND m.id = $3"),
            &[&scope.owner, &scope.workspace, &id],
        ))?;
        row.map(|row| to_note(&row)).transpose()
    }

    fn note_links(&self, id: i64) -> Result<Vec<NoteLink>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            "SELECT from_id, to_id, relation FROM memory_links WHERE from_id = $1 OR to_id = $1
             ORDER BY created_at_ms, from_id, to_id",
            &[&id],
        ))?;
        rows.iter()
            .map(|r| Ok(NoteLink { from_id: r.try_get(0)?, to_id: r.try_get(1)?, relation: r.try_get(2)? }))
            .collect()
    }

    fn link_notes(&self, link: &NoteLink) -> Result<bool, StoreError> {
        let client = self.client()?;
        let added = wait(client.execute(
            "INSERT INTO memory_links (from_id, to_id, relation, created_at_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING",
            &[&link.from_id, &link.to_id, &link.relation, &now_ms()],
        ))?;
        Ok(added > 0)
    }

    fn search_notes(
        &self,
        scope: NoteScope<'_>,
        terms: &[String],
        most: usize,
    ) -> Result<Vec<(Note, f64)>, StoreError> {
        let query = match_any(terms);
        if query.is_empty() {
            return Ok(Vec::new());
        }
        let client = self.client()?;
        let rows = wait(client.query(
            &format!(
                "SELECT {NOTE_COLUMNS}, {SUPERSEDED} AS superseded, ts_rank(m.search, q)::FLOAT8 AS score
                 FROM memories m, to_tsquery('english', $3) q
                 WHERE m.search @@ q AND {IN_SCOPE}
                 ORDER BY m.pinned DESC, superseded, score DESC, m.id DESC LIMIT $4"
            ),
            &[&scope.owner, &scope.workspace, &query, &limit(most)],
        ))?;
        rows.iter().map(|row| Ok((to_note(row)?, row.try_get::<_, f64>(11)?))).collect()
    }

    fn recent_notes(&self, scope: NoteScope<'_>, most: usize) -> Result<Vec<Note>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            &format!(
                "SELECT {NOTE_COLUMNS}, {SUPERSEDED} FROM memories m
                 WHERE {IN_SCOPE} AND (m.pinned OR NOT {SUPERSEDED})
                 ORDER BY m.pinned DESC, m.created_at_ms DESC, m.id DESC LIMIT $3"
            ),
            &[&scope.owner, &scope.workspace, &limit(most)],
        ))?;
        rows.iter().map(to_note).collect()
    }

    fn owner_notes(&self, owner: &str, most: usize) -> Result<Vec<Note>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            &format!(
                "SELECT {NOTE_COLUMNS}, {SUPERSEDED} FROM memories m WHERE m.owner = $1
                 ORDER BY m.pinned DESC, m.created_at_ms DESC, m.id DESC LIMIT $2"
            ),
            &[&owner, &limit(most)],
        ))?;
        rows.iter().map(to_note).collect()
    }

    fn pin_note(&self, owner: &str, id: i64, pinned: bool, max_pinned: usize) -> Result<PinOutcome, StoreError> {
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            let count = pinned_count(&tx, owner).await?;
            let was = tx.query_opt("SELECT pinned FROM memories WHERE owner = $1 AND id = $2", &[&owner, &id]).await?;
            let outcome = match was.map(|row| row.try_get::<_, bool>(0)).transpose()? {
                None => PinOutcome::NoNote,
                Some(false) if pinned && count >= max_pinned => PinOutcome::Full,
                Some(_) => {
                    tx.execute("UPDATE memories SET pinned = $2 WHERE id = $1", &[&id, &pinned]).await?;
                    PinOutcome::Done
                }
            };
            tx.commit().await?;
            Ok(outcome)
        })
    }

    fn remove_note(&self, owner: &str, id: i64) -> Result<bool, StoreError> {
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            let owned =
                tx.execute("SELECT 1 FROM memories WHERE owner = $1 AND id = $2 FOR UPDATE", &[&owner, &id]).await?;
            if owned > 0 {
                tx.execute("DELETE FROM memory_links WHERE from_id = $1 OR to_id = $1", &[&id]).await?;
                tx.execute("DELETE FROM memories WHERE id = $1", &[&id]).await?;
            }
            tx.commit().await?;
            Ok(owned > 0)
        })
    }

    fn count_notes(&self, scope: NoteScope<'_>) -> Result<u64, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_one(
            &format!("SELECT COUNT(*) FROM memories m WHERE {IN_SCOPE}"),
            &[&scope.owner, &scope.workspace],
        ))?;
        Ok(u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0))
    }

    fn search_engine(&self) -> &'static str {
        "tsvector"
    }
}

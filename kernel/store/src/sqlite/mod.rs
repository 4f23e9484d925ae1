//! The SQLite engine: one file in WAL mode, one writer connection behind a mutex, owned by
//! one kernel (its data directory's lock).

mod artifacts;
mod forwarding;
mod leases;
mod memories;
mod schedules;

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};
use superpi_proto::event::now_ms;
use superpi_proto::{Entry, Message};

use crate::{
    Commit, ConversationRow, ConversationSettings, ListFrom, Listed, NewConversation, Store, StoreError, TurnStatus,
    ended_at_ms, entries_page_of, events_page_of, readdress, to_json,
};

/// The numbered migrations, in order. Append only.
pub(crate) const MIGRATIONS: &[(&str, &str)] = migrations_in!("../../migrations/");
/// Prepared statements kept per connection (rusqlite keeps 16 by default; the store runs more
/// than that often).
const STATEMENT_CACHE: usize = 128;

pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating) the database and runs pending migrations.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open(path)?;
        Self::init(conn)
    }

    pub fn open_in_memory() -> Result<SqliteStore, StoreError> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<SqliteStore, StoreError> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // A killed process loses nothing committed in WAL mode with NORMAL; only power loss
        // can take the last transactions, which is the trade every WAL user makes.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Statements are prepared once and kept (`prepare_cached`): parsing SQL was a sixth of
        // a one-shot turn's kernel time. Room for every statement the store runs often.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        migrate(&mut conn)?;
        Ok(SqliteStore { conn: Mutex::new(conn) })
    }

    pub(crate) fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs SQLite's integrity check.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        Ok(self.conn().prepare_cached("PRAGMA integrity_check")?.query_row([], |r| r.get(0))?)
    }

    #[cfg(test)]
    pub(crate) fn journal_mode(&self) -> Result<String, StoreError> {
        Ok(self.conn().prepare_cached("PRAGMA journal_mode")?.query_row([], |r| r.get(0))?)
    }
}

impl Store for SqliteStore {
    fn schema_version(&self) -> Result<usize, StoreError> {
        let v: i64 = self.conn().prepare_cached("PRAGMA user_version")?.query_row([], |r| r.get(0))?;
        Ok(v as usize)
    }

    fn create_conversation(&self, new: &NewConversation) -> Result<ConversationRow, StoreError> {
        let now = now_ms();
        let conn = self.conn();
        conn.prepare_cached("INSERT INTO conversations (owner, harness, model, mode, workspace, title, parent_id, settings, created_at_ms, updated_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)")?.execute(
            params![
                new.owner,
                new.harness,
                new.model,
                new.mode,
                new.workspace,
                new.title,
                new.parent_id,
                new.settings.to_column(),
                now
            ],
        )?;
        let id = conn.last_insert_rowid();
        drop(conn);
        self.conversation(id)?.ok_or_else(|| StoreError::Corrupt(format!("conversation {id} vanished")))
    }

    fn conversation(&self, id: i64) -> Result<Option<ConversationRow>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id, owner, harness, model, mode, workspace, title, parent_id, created_at_ms, settings
                 FROM conversations WHERE id = ?1",
                [id],
                row_to_conversation,
            )
            .optional()?)
    }

    fn list_conversations(&self, owner: &str, limit: u32, from: ListFrom) -> Result<Vec<Listed>, StoreError> {
        const COLUMNS: &str = "SELECT id, owner, harness, model, mode, workspace, title, parent_id, created_at_ms, settings, \
                               updated_at_ms FROM conversations WHERE owner = ?1";
        const ORDER: &str = "ORDER BY updated_at_ms DESC, id DESC LIMIT ?2";
        // One statement for the page with its rows' head seqs and costs.
        let listed = |page: &str| crate::listed_page(page, "MAX");
        let conn = self.conn();
        let read = |r: &rusqlite::Row<'_>| {
            Ok(Listed {
                row: row_to_conversation(r)?,
                updated_at_ms: r.get(10)?,
                head_seq: r.get::<_, i64>(11)? as u64,
                last_usage: r.get(12)?,
            })
        };
        let rows = match from {
            ListFrom::Offset(offset) => conn
                .prepare_cached(&listed(&format!("{COLUMNS} {ORDER} OFFSET ?3")))?
                .query_map(params![owner, limit, offset], read)?
                .collect::<Result<Vec<_>, _>>()?,
            // A row value: SQLite walks the (owner, updated_at_ms, id) index from the position.
            ListFrom::After { updated_at_ms, id } => conn
                .prepare_cached(&listed(&format!("{COLUMNS} AND (updated_at_ms, id) < (?3, ?4) {ORDER}")))?
                .query_map(params![owner, limit, updated_at_ms, id], read)?
                .collect::<Result<Vec<_>, _>>()?,
        };
        Ok(rows)
    }

    fn set_mode(&self, id: i64, mode: &str) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE conversations SET mode = ?2, updated_at_ms = ?3 WHERE id = ?1")?
            .execute(params![id, mode, now_ms()])?;
        Ok(())
    }

    fn set_model(&self, id: i64, model: &str) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE conversations SET model = ?2, updated_at_ms = ?3 WHERE id = ?1")?
            .execute(params![id, model, now_ms()])?;
        Ok(())
    }

    fn set_settings(&self, id: i64, settings: &ConversationSettings) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE conversations SET settings = ?2, updated_at_ms = ?3 WHERE id = ?1")?
            .execute(params![id, settings.to_column(), now_ms()])?;
        Ok(())
    }

    fn delete_conversation(&self, id: i64) -> Result<bool, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let mut deleted = 0;
        for sql in crate::DELETE_CONVERSATION {
            deleted = tx.execute(sql, [id])?;
        }
        tx.commit()?;
        Ok(deleted > 0)
    }

    fn permission_overrides(&self, id: i64) -> Result<Option<String>, StoreError> {
        let json = self
            .conn()
            .query_row("SELECT overrides FROM permission_overrides WHERE conversation_id = ?1", [id], |r| r.get(0))
            .optional()?;
        Ok(json)
    }

    fn set_permission_overrides(&self, id: i64, json: &str) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached(
                "INSERT INTO permission_overrides (conversation_id, overrides) VALUES (?1, ?2)
             ON CONFLICT (conversation_id) DO UPDATE SET overrides = excluded.overrides",
            )?
            .execute(params![id, json])?;
        Ok(())
    }

    fn set_harness(
        &self,
        id: i64,
        harness: &str,
        (mode, model): (&str, &str),
        settings: &ConversationSettings,
    ) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached(
                "UPDATE conversations SET harness = ?2, mode = ?3, model = ?4, settings = ?5, updated_at_ms = ?6 \
                 WHERE id = ?1",
            )?
            .execute(params![id, harness, mode, model, settings.to_column(), now_ms()])?;
        Ok(())
    }

    fn add_daily_spend(&self, owner: &str, day: i64, usd: f64) -> Result<f64, StoreError> {
        Ok(self
            .conn()
            .prepare_cached(
                "INSERT INTO daily_spend (owner, day, usd) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (owner, day) DO UPDATE SET usd = usd + excluded.usd RETURNING usd",
            )?
            .query_row(params![owner, day, usd], |row| row.get(0))?)
    }

    fn daily_spend(&self, owner: &str, day: i64) -> Result<f64, StoreError> {
        let usd = self
            .conn()
            .prepare_cached("SELECT usd FROM daily_spend WHERE owner = ?1 AND day = ?2")?
            .query_row(params![owner, day], |row| row.get(0))
            .optional()?;
        Ok(usd.unwrap_or(0.0))
    }

    fn set_title(&self, id: i64, title: &str) -> Result<(), StoreError> {
        self.conn()
            .execute("UPDATE conversations SET title = ?2 WHERE id = ?1 AND title IS NULL", params![id, title])?;
        Ok(())
    }

    fn find_external(&self, frontend: &str, principal: &str, external_id: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT conversation_id FROM frontend_sessions WHERE frontend = ?1 AND principal = ?2 AND external_id = ?3",
                params![frontend, principal, external_id],
                |r| r.get(0),
            )
            .optional()?)
    }

    fn bind_external(
        &self,
        frontend: &str,
        principal: &str,
        external_id: &str,
        conversation_id: i64,
    ) -> Result<(), StoreError> {
        self.conn().prepare_cached("INSERT OR REPLACE INTO frontend_sessions (frontend, principal, external_id, conversation_id, created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(
            params![frontend, principal, external_id, conversation_id, now_ms()],
        )?;
        Ok(())
    }

    fn head_seq(&self, conversation_id: i64) -> Result<u64, StoreError> {
        let seq: i64 = self
            .conn()
            .prepare_cached(
                "SELECT MAX(m) FROM (SELECT COALESCE(MAX(seq), 0) AS m FROM events WHERE conversation_id = ?1
                                 UNION ALL SELECT COALESCE(MAX(seq), 0) FROM entries WHERE conversation_id = ?1)",
            )?
            .query_row([conversation_id], |r| r.get(0))?;
        Ok(seq as u64)
    }

    fn commit(&self, c: &Commit<'_>) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        if let Some(lease) = c.lease {
            crate::sqlite::leases::check(&tx, c.conversation_id, lease)?;
        }
        tx.prepare_cached("INSERT INTO events (conversation_id, seq, type, wire) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![c.conversation_id, c.seq as i64, c.event_type, c.wire])?;
        let now = now_ms();
        if let Some((kind, turn_id, message)) = c.entry {
            tx.prepare_cached(
                "INSERT INTO entries (conversation_id, seq, kind, turn_id, message, created_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                c.conversation_id,
                c.seq as i64,
                kind.as_str(),
                turn_id,
                to_json(message)?,
                now
            ])?;
        }
        tx.prepare_cached("UPDATE conversations SET updated_at_ms = ?2 WHERE id = ?1")?
            .execute(params![c.conversation_id, now])?;
        if let Some(turn) = c.turn_status {
            update_turn_status(&tx, turn)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn events_page(
        &self,
        conversation_id: i64,
        after: u64,
        up_to: u64,
        max_events: usize,
        max_bytes: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, wire FROM events WHERE conversation_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq LIMIT ?4",
        )?;
        let rows = stmt.query_map(
            params![
                conversation_id,
                after.min(i64::MAX as u64) as i64,
                up_to.min(i64::MAX as u64) as i64,
                max_events.min(i64::MAX as usize) as i64
            ],
            |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, String>(1)?)),
        )?;
        events_page_of(rows, max_bytes)
    }

    fn latest_events(
        &self,
        conversation_id: i64,
        event_type: &str,
        most: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, wire FROM events WHERE conversation_id = ?1 AND type = ?2 ORDER BY seq DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![conversation_id, event_type, most.min(i64::MAX as usize) as i64], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, String>(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn entries_page(
        &self,
        conversation_id: i64,
        after: u64,
        max_entries: usize,
        max_bytes: usize,
    ) -> Result<(Vec<Entry>, bool), StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, kind, turn_id, message, created_at_ms FROM entries WHERE conversation_id = ?1 AND seq > ?2
             ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![conversation_id, after.min(i64::MAX as u64) as i64], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })?;
        entries_page_of(rows, max_entries, max_bytes)
    }

    fn create_turn(&self, conversation_id: i64, prompt: &Message) -> Result<i64, StoreError> {
        let json = to_json(prompt)?;
        let conn = self.conn();
        conn.prepare_cached(
            "INSERT INTO turns (conversation_id, status, prompt, created_at_ms) VALUES (?1, 'queued', ?2, ?3)",
        )?
        .execute(params![conversation_id, json, now_ms()])?;
        Ok(conn.last_insert_rowid())
    }

    fn set_turn_status(&self, turn_id: i64, status: &str, error: Option<&str>) -> Result<(), StoreError> {
        update_turn_status(&self.conn(), TurnStatus { turn_id, status, error })
    }

    fn turn_status(&self, turn_id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached("SELECT status FROM turns WHERE id = ?1")?
            .query_row([turn_id], |r| r.get(0))
            .optional()?)
    }

    fn turn_outcome(&self, turn_id: i64) -> Result<Option<(String, Option<String>)>, StoreError> {
        let row = self
            .conn()
            .query_row("SELECT status, error FROM turns WHERE id = ?1", [turn_id], |r| Ok((r.get(0)?, r.get(1)?)));
        Ok(row.optional()?)
    }

    fn fork(&self, source: &ConversationRow, owner: &str, at_seq: Option<u64>) -> Result<ConversationRow, StoreError> {
        let at = at_seq.map(|s| s as i64).unwrap_or(i64::MAX);
        let now = now_ms();
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.prepare_cached("INSERT INTO conversations (owner, harness, model, mode, workspace, title, parent_id, fork_seq, settings, created_at_ms, updated_at_ms)
             SELECT ?2, harness, model, mode, workspace, title, id, ?3, settings, ?4, ?4 FROM conversations WHERE id = ?1")?.execute(
            params![source.id, owner, at_seq.map(|s| s as i64), now],
        )?;
        let id = tx.last_insert_rowid();
        tx.prepare_cached(
            "INSERT INTO entries (conversation_id, seq, kind, turn_id, message, created_at_ms)
             SELECT ?2, seq, kind, NULL, message, created_at_ms FROM entries WHERE conversation_id = ?1 AND seq <= ?3",
        )?
        .execute(params![source.id, id, at])?;
        // Stored events keep their wire form; the copies are re-addressed to the fork.
        let events: Vec<(i64, String, String)> = {
            let mut stmt = tx.prepare_cached(
                "SELECT seq, type, wire FROM events WHERE conversation_id = ?1 AND seq <= ?2 ORDER BY seq",
            )?;
            stmt.query_map(params![source.id, at], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<_, _>>()?
        };
        for (seq, ty, wire) in events {
            let wire = readdress(&wire, id).unwrap_or(wire);
            tx.prepare_cached("INSERT INTO events (conversation_id, seq, type, wire) VALUES (?1, ?2, ?3, ?4)")?
                .execute(params![id, seq, ty, wire])?;
        }
        tx.commit()?;
        drop(conn);
        self.conversation(id)?.ok_or_else(|| StoreError::Corrupt(format!("fork {id} vanished")))
    }

    fn put_image(&self, sha256: &str, media_type: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached(
                "INSERT INTO images (sha256, media_type, bytes, created_at_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (sha256) DO NOTHING",
            )?
            .execute(params![sha256, media_type, bytes, now_ms()])?;
        Ok(())
    }

    fn image(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached("SELECT bytes FROM images WHERE sha256 = ?1")?
            .query_row([sha256], |r| r.get(0))
            .optional()?)
    }

    fn checkpoint(&self) -> Result<(), StoreError> {
        self.conn().prepare_cached("PRAGMA wal_checkpoint(TRUNCATE)")?.query_row([], |_| Ok(()))?;
        Ok(())
    }
}

fn update_turn_status(conn: &Connection, turn: TurnStatus<'_>) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE turns SET status = ?2, error = ?3, ended_at_ms = ?4 WHERE id = ?1")?
        .execute(params![turn.turn_id, turn.status, turn.error, ended_at_ms(turn.status)])?;
    Ok(())
}

fn row_to_conversation(r: &rusqlite::Row<'_>) -> rusqlite::Result<ConversationRow> {
    Ok(ConversationRow {
        id: r.get(0)?,
        owner: r.get(1)?,
        harness: r.get(2)?,
        model: r.get(3)?,
        mode: r.get(4)?,
        workspace: r.get(5)?,
        title: r.get(6)?,
        parent_id: r.get(7)?,
        created_at_ms: r.get(8)?,
        settings: ConversationSettings::from_column(&r.get::<_, String>(9)?),
    })
}

fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let current: i64 = conn.prepare_cached("PRAGMA user_version")?.query_row([], |r| r.get(0))?;
    let current = current as usize;
    if current > MIGRATIONS.len() {
        return Err(StoreError::TooNew { found: current, known: MIGRATIONS.len() });
    }
    for (i, (name, sql)) in MIGRATIONS.iter().enumerate().skip(current) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
        tracing::info!("applied migration {name}");
    }
    Ok(())
}

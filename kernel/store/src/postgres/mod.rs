//! The PostgreSQL engine: a database server several kernels can share
//! (`SUPERPI_DATABASE_URL`, `superpi kernel --database URL`).
//!
//! The kernel calls its store synchronously (SQLite answers from a local file, and the
//! publisher commits under its seq lock), so this engine keeps that shape: a few connections
//! ([`POOL`]), driven by a thread of its own; a call takes a free one (so the commits of
//! different conversations go out side by side) and waits for its answer (through
//! `block_in_place` on the kernel's multi-thread runtime, so other tasks move on meanwhile).
//! A connection that broke is opened again at its next call (`store/postgres_connection.rs`).
//!
//! Over 500 lines on purpose: one function per `Store` method, each holding its SQL, as the
//! SQLite engine's; the connection and the migrations are modules of their own.

mod artifacts;
pub(crate) mod connection;
mod forwarding;
mod leases;
mod memories;
mod schedules;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use superpi_proto::event::now_ms;
use superpi_proto::{Entry, Message};
use tokio_postgres::{Client, GenericClient, Row};

use crate::postgres::connection::Driver;
use crate::postgres::connection::{Connection, Target, wait};
use crate::{
    Commit, ConversationRow, ConversationSettings, ListFrom, Listed, NewConversation, Notice, Store, StoreError,
    TurnStatus, ended_at_ms, entries_page_of, events_page_of, readdress, to_json,
};

/// The numbered migrations in PostgreSQL's dialect: the same numbers and names as SQLite's.
pub(crate) const MIGRATIONS: &[(&str, &str)] = migrations_in!("../../migrations/postgres/");

/// The advisory lock kernels take while migrating, so two starting at once migrate in turn.
const MIGRATION_LOCK: i64 = 0x7375_7065_7270_6900; // "superpi\0"

const INSERT_EVENT: &str = "INSERT INTO events (conversation_id, seq, type, wire) VALUES ($1, $2, $3, $4)";
/// Notifications in the order of the array (a function scan reads it in order).
pub(crate) const NOTIFY_ALL: &str = "SELECT pg_notify('superpi', p) FROM unnest($1::TEXT[]) AS p";
const INSERT_ENTRY: &str = "INSERT INTO entries (conversation_id, seq, kind, turn_id, message, created_at_ms)
                            VALUES ($1, $2, $3, $4, $5, $6)";
const TOUCH_CONVERSATION: &str = "UPDATE conversations SET updated_at_ms = $2 WHERE id = $1";
const SET_TURN_STATUS: &str = "UPDATE turns SET status = $2, error = $3, ended_at_ms = $4 WHERE id = $1";

const CONVERSATION_COLUMNS: &str =
    "id, owner, harness, model, mode, workspace, title, parent_id, created_at_ms, settings";

impl From<tokio_postgres::Error> for StoreError {
    fn from(err: tokio_postgres::Error) -> Self {
        // The server's own words (and detail) say more than the driver's "db error".
        let text = match err.as_db_error() {
            Some(db) => match db.detail() {
                Some(detail) => format!("{}: {} ({detail})", db.severity(), db.message()),
                None => format!("{}: {}", db.severity(), db.message()),
            },
            // The driver's words, then why (a TLS handshake's: which certificate check failed).
            None => {
                let mut text = err.to_string();
                let mut source = std::error::Error::source(&err);
                while let Some(cause) = source {
                    text = format!("{text}: {cause}");
                    source = cause.source();
                }
                text
            }
        };
        StoreError::Postgres(text)
    }
}

/// Connections for statements per kernel (the listening one aside). More let more calls wait
/// on the server at once; each is a server process.
pub(crate) const POOL: usize = 4;

pub struct PostgresStore {
    target: Target,
    driver: Driver,
    pool: Vec<Mutex<Connection>>,
    /// Where the next call starts looking for a free connection.
    next: AtomicUsize,
    /// What the listening connection hears from other kernels, notices and deltas in the order
    /// heard (`store/postgres_leases.rs`).
    pub(crate) heard: tokio::sync::broadcast::Sender<crate::Heard>,
}

impl PostgresStore {
    /// Connects to the database a connection string names (a `postgresql://` URL or
    /// `key=value` pairs) and runs pending migrations. TLS (rustls) when it says `sslmode=require`
    /// or `verify-full` (the server's certificate and name checked) or `verify-ca` (its
    /// certificate only), against the system's roots or those of `sslrootcert=FILE`.
    pub fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        let target = Target::parse(url)?;
        let driver = Driver::start()?;
        let mut client = driver.connect(&target)?;
        wait(migrate(&mut client))?;
        let mut pool = vec![Mutex::new(Connection::new(client))];
        for _ in 1..POOL {
            pool.push(Mutex::new(Connection::new(driver.connect(&target)?)));
        }
        let (heard, _) = tokio::sync::broadcast::channel(crate::postgres::leases::NOTICE_BACKLOG);
        driver.handle.spawn(crate::postgres::leases::listen(target.clone(), heard.clone()));
        Ok(PostgresStore { target, driver, pool, next: AtomicUsize::new(0), heard })
    }

    /// A free connection (else the next in turn, once free), opened again when it broke.
    pub(crate) fn client(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let slots = self.pool.len();
        let free = (0..slots).find_map(|i| match self.pool[(start + i) % slots].try_lock() {
            Ok(client) => Some(client),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        });
        let mut client = match free {
            Some(client) => client,
            None => self.pool[start % slots].lock().unwrap_or_else(|p| p.into_inner()),
        };
        if client.is_closed() {
            tracing::warn!("a database connection was closed: connecting again");
            *client = Connection::new(self.driver.connect(&self.target)?);
        }
        Ok(client)
    }
}

async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS superpi_schema (
             one     BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
             version BIGINT  NOT NULL
         )",
    )
    .await?;
    let current = tx.query_opt("SELECT version FROM superpi_schema", &[]).await?;
    let current = current.map(|row| row.try_get::<_, i64>(0)).transpose()?.unwrap_or(0) as usize;
    if current > MIGRATIONS.len() {
        return Err(StoreError::TooNew { found: current, known: MIGRATIONS.len() });
    }
    for (name, sql) in &MIGRATIONS[current..] {
        tx.batch_execute(sql).await?;
        tracing::info!("applied migration {name}");
    }
    tx.execute(
        "INSERT INTO superpi_schema (version) VALUES ($1) ON CONFLICT (one) DO UPDATE SET version = excluded.version",
        &[&(MIGRATIONS.len() as i64)],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

fn to_conversation(row: &Row) -> Result<ConversationRow, StoreError> {
    Ok(ConversationRow {
        id: row.try_get(0)?,
        owner: row.try_get(1)?,
        harness: row.try_get(2)?,
        model: row.try_get(3)?,
        mode: row.try_get(4)?,
        workspace: row.try_get(5)?,
        title: row.try_get(6)?,
        parent_id: row.try_get(7)?,
        created_at_ms: row.try_get(8)?,
        settings: ConversationSettings::from_column(row.try_get(9)?),
    })
}

/// A seq or count as PostgreSQL's BIGINT (past its range: its greatest value).
fn bigint(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) async fn update_turn_status(client: &impl GenericClient, turn: TurnStatus<'_>) -> Result<(), StoreError> {
    client.execute(SET_TURN_STATUS, &[&turn.turn_id, &turn.status, &turn.error, &ended_at_ms(turn.status)]).await?;
    Ok(())
}

impl Store for PostgresStore {
    fn schema_version(&self) -> Result<usize, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_one("SELECT version FROM superpi_schema", &[]))?;
        Ok(row.try_get::<_, i64>(0)? as usize)
    }

    fn create_conversation(&self, new: &NewConversation) -> Result<ConversationRow, StoreError> {
        let now = now_ms();
        let client = self.client()?;
        let row = wait(client.query_one(
            &format!(
                "INSERT INTO conversations (owner, harness, model, mode, workspace, title, parent_id, settings,
                                            created_at_ms, updated_at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING {CONVERSATION_COLUMNS}"
            ),
            &[
                &new.owner,
                &new.harness,
                &new.model,
                &new.mode,
                &new.workspace,
                &new.title,
                &new.parent_id,
                &new.settings.to_column(),
                &now,
            ],
        ))?;
        to_conversation(&row)
    }

    fn conversation(&self, id: i64) -> Result<Option<ConversationRow>, StoreError> {
        let client = self.client()?;
        let row =
            wait(client.query_opt(&format!("SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = $1"), &[&id]))?;
        row.as_ref().map(to_conversation).transpose()
    }

    fn list_conversations(&self, owner: &str, limit: u32, from: ListFrom) -> Result<Vec<Listed>, StoreError> {
        let client = self.client()?;
        let select = format!("SELECT {CONVERSATION_COLUMNS}, updated_at_ms FROM conversations WHERE owner = $1");
        let order = "ORDER BY updated_at_ms DESC, id DESC LIMIT $2";
        // One statement for the page with its rows' head seqs and costs.
        let listed = |page: &str| crate::listed_page(page, "GREATEST");
        let rows = match from {
            ListFrom::Offset(offset) => wait(client.query(
                &listed(&format!("{select} {order} OFFSET $3")),
                &[&owner, &i64::from(limit), &i64::from(offset)],
            ))?,
            ListFrom::After { updated_at_ms, id } => wait(client.query(
                &listed(&format!("{select} AND (updated_at_ms, id) < ($3, $4) {order}")),
                &[&owner, &i64::from(limit), &updated_at_ms, &id],
            ))?,
        };
        rows.iter()
            .map(|row| {
                Ok(Listed {
                    row: to_conversation(row)?,
                    updated_at_ms: row.try_get(10)?,
                    head_seq: row.try_get::<_, i64>(11)? as u64,
                    last_usage: row.try_get(12)?,
                })
            })
            .collect()
    }

    fn set_mode(&self, id: i64, mode: &str) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE conversations SET mode = $2, updated_at_ms = $3 WHERE id = $1",
            &[&id, &mode, &now_ms()],
        ))?;
        Ok(())
    }

    fn set_model(&self, id: i64, model: &str) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE conversations SET model = $2, updated_at_ms = $3 WHERE id = $1",
            &[&id, &model, &now_ms()],
        ))?;
        Ok(())
    }

    fn set_settings(&self, id: i64, settings: &ConversationSettings) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE conversations SET settings = $2, updated_at_ms = $3 WHERE id = $1",
            &[&id, &settings.to_column(), &now_ms()],
        ))?;
        Ok(())
    }

    fn delete_conversation(&self, id: i64) -> Result<bool, StoreError> {
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            let mut deleted = 0;
            for sql in crate::DELETE_CONVERSATION {
                deleted = tx.execute(*sql, &[&id]).await?;
            }
            tx.commit().await?;
            Ok(deleted > 0)
        })
    }

    fn permission_overrides(&self, id: i64) -> Result<Option<String>, StoreError> {
        let client = self.client()?;
        let row =
            wait(client.query_opt("SELECT overrides FROM permission_overrides WHERE conversation_id = $1", &[&id]))?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    fn set_permission_overrides(&self, id: i64, json: &str) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            "INSERT INTO permission_overrides (conversation_id, overrides) VALUES ($1, $2)
             ON CONFLICT (conversation_id) DO UPDATE SET overrides = excluded.overrides",
            &[&id, &json],
        ))?;
        Ok(())
    }

    fn set_harness(
        &self,
        id: i64,
        harness: &str,
        (mode, model): (&str, &str),
        settings: &ConversationSettings,
    ) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE conversations SET harness = $2, mode = $3, model = $4, settings = $5, updated_at_ms = $6 \
             WHERE id = $1",
            &[&id, &harness, &mode, &model, &settings.to_column(), &now_ms()],
        ))?;
        Ok(())
    }

    fn add_daily_spend(&self, owner: &str, day: i64, usd: f64) -> Result<f64, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_one(
            "INSERT INTO daily_spend (owner, day, usd) VALUES ($1, $2, $3) \
             ON CONFLICT (owner, day) DO UPDATE SET usd = daily_spend.usd + EXCLUDED.usd RETURNING usd",
            &[&owner, &day, &usd],
        ))?;
        Ok(row.get(0))
    }

    fn daily_spend(&self, owner: &str, day: i64) -> Result<f64, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt("SELECT usd FROM daily_spend WHERE owner = $1 AND day = $2", &[&owner, &day]))?;
        Ok(row.map_or(0.0, |row| row.get(0)))
    }

    fn set_title(&self, id: i64, title: &str) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute("UPDATE conversations SET title = $2 WHERE id = $1 AND title IS NULL", &[&id, &title]))?;
        Ok(())
    }

    fn find_external(&self, frontend: &str, principal: &str, external_id: &str) -> Result<Option<i64>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            "SELECT conversation_id FROM frontend_sessions WHERE frontend = $1 AND principal = $2 AND external_id = $3",
            &[&frontend, &principal, &external_id],
        ))?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    fn bind_external(
        &self,
        frontend: &str,
        principal: &str,
        external_id: &str,
        conversation_id: i64,
    ) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            "INSERT INTO frontend_sessions (frontend, principal, external_id, conversation_id, created_at_ms)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (frontend, principal, external_id)
             DO UPDATE SET conversation_id = excluded.conversation_id, created_at_ms = excluded.created_at_ms",
            &[&frontend, &principal, &external_id, &conversation_id, &now_ms()],
        ))?;
        Ok(())
    }

    fn head_seq(&self, conversation_id: i64) -> Result<u64, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_one(
            "SELECT GREATEST((SELECT COALESCE(MAX(seq), 0) FROM events WHERE conversation_id = $1),
                             (SELECT COALESCE(MAX(seq), 0) FROM entries WHERE conversation_id = $1))",
            &[&conversation_id],
        ))?;
        Ok(row.try_get::<_, i64>(0)? as u64)
    }

    fn commit(&self, c: &Commit<'_>) -> Result<(), StoreError> {
        let entry = match c.entry {
            Some((kind, turn_id, message)) => Some((kind.as_str(), turn_id, to_json(message)?)),
            None => None,
        };
        let seq = bigint(c.seq);
        // Watchers on other kernels read it from the store when they hear of it, after the
        // deltas before it.
        let mut notices = crate::live::payloads(c.conversation_id, c.live);
        notices.push(Notice::Event { conversation_id: c.conversation_id, seq: c.seq }.payload());
        let now = now_ms();
        let mut conn = self.client()?;
        wait(async {
            let check = conn.prepared(crate::postgres::leases::LEASE_CHECK).await?;
            let insert_event = conn.prepared(INSERT_EVENT).await?;
            let notify = conn.prepared(NOTIFY_ALL).await?;
            let insert_entry = conn.prepared(INSERT_ENTRY).await?;
            let touch = conn.prepared(TOUCH_CONVERSATION).await?;
            let set_status = conn.prepared(SET_TURN_STATUS).await?;
            let tx = conn.transaction().await?;
            // Sent at once and run in order: one round trip for the lot. A lease check that
            // finds the lease taken over rolls back what followed it.
            let held = async {
                match c.lease {
                    Some(lease) => {
                        let row = tx.query_opt(&check, &[&c.conversation_id, &lease.owner, &lease.generation]).await?;
                        Ok::<_, tokio_postgres::Error>(row.is_some())
                    }
                    None => Ok(true),
                }
            };
            let event = async { tx.execute(&insert_event, &[&c.conversation_id, &seq, &c.event_type, &c.wire]).await };
            let notified = async { tx.execute(&notify, &[&notices]).await };
            let entry = async {
                match &entry {
                    Some((kind, turn_id, json)) => {
                        tx.execute(&insert_entry, &[&c.conversation_id, &seq, kind, turn_id, json, &now]).await
                    }
                    None => Ok(0),
                }
            };
            let touched = async { tx.execute(&touch, &[&c.conversation_id, &now]).await };
            let status = async {
                match c.turn_status {
                    Some(t) => {
                        tx.execute(&set_status, &[&t.turn_id, &t.status, &t.error, &ended_at_ms(t.status)]).await
                    }
                    None => Ok(0),
                }
            };
            // All awaited before any error counts: a lease taken over is `Fenced` also when the
            // statements after the check failed for it (the new holder used the seq already).
            let (held, event, notified, entry, touched, status) =
                futures::join!(held, event, notified, entry, touched, status);
            if !held? {
                return Err(StoreError::Fenced(c.conversation_id));
            }
            event?;
            notified?;
            entry?;
            touched?;
            status?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn events_page(
        &self,
        conversation_id: i64,
        after: u64,
        up_to: u64,
        max_events: usize,
        max_bytes: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            "SELECT seq, wire FROM events WHERE conversation_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4",
            &[&conversation_id, &bigint(after), &bigint(up_to), &bigint(max_events as u64)],
        ))?;
        let rows =
            rows.iter().map(|row| Ok::<_, tokio_postgres::Error>((row.try_get::<_, i64>(0)? as u64, row.try_get(1)?)));
        events_page_of(rows, max_bytes)
    }

    fn latest_events(
        &self,
        conversation_id: i64,
        event_type: &str,
        most: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            "SELECT seq, wire FROM events WHERE conversation_id = $1 AND type = $2 ORDER BY seq DESC LIMIT $3",
            &[&conversation_id, &event_type, &bigint(most as u64)],
        ))?;
        rows.iter().map(|row| Ok((row.try_get::<_, i64>(0)? as u64, row.try_get::<_, String>(1)?))).collect()
    }

    fn entries_page(
        &self,
        conversation_id: i64,
        after: u64,
        max_entries: usize,
        max_bytes: usize,
    ) -> Result<(Vec<Entry>, bool), StoreError> {
        let client = self.client()?;
        // One row past the page says whether more follow.
        let rows = wait(client.query(
            "SELECT seq, kind, turn_id, message, created_at_ms FROM entries WHERE conversation_id = $1 AND seq > $2
             ORDER BY seq LIMIT $3",
            &[&conversation_id, &bigint(after), &bigint((max_entries as u64).saturating_add(1))],
        ))?;
        let rows = rows.iter().map(|row| {
            Ok::<_, tokio_postgres::Error>((
                row.try_get(0)?,
                row.try_get(1)?,
                row.try_get(2)?,
                row.try_get(3)?,
                row.try_get(4)?,
            ))
        });
        entries_page_of(rows, max_entries, max_bytes)
    }

    fn create_turn(&self, conversation_id: i64, prompt: &Message) -> Result<i64, StoreError> {
        let json = to_json(prompt)?;
        let client = self.client()?;
        let row = wait(client.query_one(
            "INSERT INTO turns (conversation_id, status, prompt, created_at_ms) VALUES ($1, 'queued', $2, $3)
             RETURNING id",
            &[&conversation_id, &json, &now_ms()],
        ))?;
        Ok(row.try_get(0)?)
    }

    fn set_turn_status(&self, turn_id: i64, status: &str, error: Option<&str>) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(update_turn_status(&**client, TurnStatus { turn_id, status, error }))
    }

    fn turn_status(&self, turn_id: i64) -> Result<Option<String>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt("SELECT status FROM turns WHERE id = $1", &[&turn_id]))?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    fn turn_outcome(&self, turn_id: i64) -> Result<Option<(String, Option<String>)>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt("SELECT status, error FROM turns WHERE id = $1", &[&turn_id]))?;
        Ok(row.map(|r| Ok::<_, tokio_postgres::Error>((r.try_get(0)?, r.try_get(1)?))).transpose()?)
    }

    fn fork(&self, source: &ConversationRow, owner: &str, at_seq: Option<u64>) -> Result<ConversationRow, StoreError> {
        let at = at_seq.map_or(i64::MAX, bigint);
        let now = now_ms();
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            let row = tx
                .query_one(
                    &format!(
                        "INSERT INTO conversations (owner, harness, model, mode, workspace, title, parent_id, fork_seq,
                                                    settings, created_at_ms, updated_at_ms)
                         SELECT $2, harness, model, mode, workspace, title, id, $3, settings, $4, $4 FROM conversations
                         WHERE id = $1
                         RETURNING {CONVERSATION_COLUMNS}"
                    ),
                    &[&source.id, &owner, &at_seq.map(bigint), &now],
                )
                .await?;
            let fork = to_conversation(&row)?;
            tx.execute(
                "INSERT INTO entries (conversation_id, seq, kind, turn_id, message, created_at_ms)
                 SELECT $2, seq, kind, NULL, message, created_at_ms FROM entries WHERE conversation_id = $1 AND seq <= $3",
                &[&source.id, &fork.id, &at],
            )
            .await?;
            // Stored events keep their wire form; the copies are re-addressed to the fork.
            let events = tx
                .query(
                    "SELECT seq, type, wire FROM events WHERE conversation_id = $1 AND seq <= $2 ORDER BY seq",
                    &[&source.id, &at],
                )
                .await?;
            let insert =
                tx.prepare("INSERT INTO events (conversation_id, seq, type, wire) VALUES ($1, $2, $3, $4)").await?;
            for event in events {
                let (seq, ty, wire): (i64, String, String) = (event.try_get(0)?, event.try_get(1)?, event.try_get(2)?);
                let wire = readdress(&wire, fork.id).unwrap_or(wire);
                tx.execute(&insert, &[&fork.id, &seq, &ty, &wire]).await?;
            }
            tx.commit().await?;
            Ok(fork)
        })
    }

    fn put_image(&self, sha256: &str, media_type: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            "INSERT INTO images (sha256, media_type, bytes, created_at_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT (sha256) DO NOTHING",
            &[&sha256, &media_type, &bytes, &now_ms()],
        ))?;
        Ok(())
    }

    fn image(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt("SELECT bytes FROM images WHERE sha256 = $1", &[&sha256]))?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    fn checkpoint(&self) -> Result<(), StoreError> {
        // The server keeps its own log; a kernel's stop leaves nothing to fold.
        Ok(())
    }
}

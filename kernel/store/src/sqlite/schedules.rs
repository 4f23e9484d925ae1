//! Schedules on SQLite: one writer connection, so a tick's claim (the conditional move of
//! `next_at_ms` and the run's row) is one transaction no other claim interleaves with.

use rusqlite::{OptionalExtension, Row, params};
use superpi_proto::event::now_ms;

use crate::StoreError;
use crate::schedules::{
    Columns, DELIVERY_MEMORY_MS, NewSchedule, RUN_COLUMNS, SCHEDULE_COLUMNS, SECRET_COLUMN, Schedule, ScheduleRun,
    Schedules, limit, run_of, schedule_of,
};
use crate::sqlite::SqliteStore;

impl Columns for Row<'_> {
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        Ok(self.get(i)?)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.get(i)?)
    }
    fn text(&self, i: usize) -> Result<String, StoreError> {
        Ok(self.get(i)?)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        Ok(self.get(i)?)
    }
    fn flag(&self, i: usize) -> Result<bool, StoreError> {
        Ok(self.get(i)?)
    }
}

impl SqliteStore {
    fn schedules_where(&self, filter: &str, args: impl rusqlite::Params) -> Result<Vec<Schedule>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!("SELECT {SCHEDULE_COLUMNS} FROM schedules s WHERE {filter}"))?;
        let mut rows = stmt.query(args)?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            found.push(schedule_of(row)?);
        }
        Ok(found)
    }
}

impl Schedules for SqliteStore {
    fn add_schedule(&self, s: &NewSchedule) -> Result<i64, StoreError> {
        let conn = self.conn();
        conn.prepare_cached(
            "INSERT INTO schedules (owner, conversation_id, name, prompt, cron, timezone, token_hash, secret, ceiling,
                                    next_at_ms, created_by, created_at_ms, mode, catch_up, max_failures)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )?
        .execute(params![
            s.owner,
            s.conversation_id,
            s.name,
            s.prompt,
            s.cron,
            s.timezone,
            s.token_hash,
            s.secret,
            s.ceiling,
            s.next_at_ms,
            s.created_by,
            now_ms(),
            s.how.mode,
            s.how.catch_up,
            limit(usize::try_from(s.how.max_failures).unwrap_or(usize::MAX))
        ])?;
        Ok(conn.last_insert_rowid())
    }

    fn schedules(&self, owner: &str) -> Result<Vec<Schedule>, StoreError> {
        self.schedules_where("s.owner = ?1 ORDER BY s.id", [owner])
    }

    fn schedule(&self, id: i64) -> Result<Option<Schedule>, StoreError> {
        Ok(self.schedules_where("s.id = ?1", [id])?.pop())
    }

    fn remove_schedule(&self, owner: &str, id: i64) -> Result<bool, StoreError> {
        // The runs go with it (ON DELETE CASCADE; foreign keys are on).
        let removed = self
            .conn()
            .prepare_cached("DELETE FROM schedules WHERE id = ?1 AND owner = ?2")?
            .execute(params![id, owner])?;
        Ok(removed > 0)
    }

    fn due_schedules(&self, now_ms: i64, n: usize) -> Result<Vec<Schedule>, StoreError> {
        self.schedules_where(
            "s.next_at_ms IS NOT NULL AND s.next_at_ms <= ?1 AND s.paused_at_ms IS NULL ORDER BY s.next_at_ms, s.id LIMIT ?2",
            params![now_ms, limit(n)],
        )
    }

    fn next_tick(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn()
            .query_row("SELECT MIN(next_at_ms) FROM schedules WHERE paused_at_ms IS NULL", [], |r| r.get(0))?)
    }

    fn claim_tick(&self, schedule_id: i64, due_at_ms: i64, next_at_ms: Option<i64>) -> Result<Option<i64>, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let moved = tx
            .prepare_cached("UPDATE schedules SET next_at_ms = ?3 WHERE id = ?1 AND next_at_ms = ?2")?
            .execute(params![schedule_id, due_at_ms, next_at_ms])?;
        if moved == 0 {
            return Ok(None);
        }
        tx.prepare_cached("INSERT INTO schedule_runs (schedule_id, due_at_ms, started_at_ms) VALUES (?1, ?2, ?3)")?
            .execute(params![schedule_id, due_at_ms, now_ms()])?;
        let run = tx.last_insert_rowid();
        tx.commit()?;
        Ok(Some(run))
    }

    fn skip_tick(&self, schedule_id: i64, due_at_ms: i64, next_at_ms: Option<i64>) -> Result<bool, StoreError> {
        let moved = self
            .conn()
            .prepare_cached("UPDATE schedules SET next_at_ms = ?3 WHERE id = ?1 AND next_at_ms = ?2")?
            .execute(params![schedule_id, due_at_ms, next_at_ms])?;
        Ok(moved == 1)
    }

    fn pause_schedule(&self, schedule_id: i64, now_ms: i64) -> Result<bool, StoreError> {
        let paused = self
            .conn()
            .prepare_cached("UPDATE schedules SET paused_at_ms = ?2 WHERE id = ?1 AND paused_at_ms IS NULL")?
            .execute(params![schedule_id, now_ms])?;
        Ok(paused == 1)
    }

    fn resume_schedule(&self, owner: &str, id: i64, now_ms: i64, next_at_ms: Option<i64>) -> Result<bool, StoreError> {
        let resumed = self
            .conn()
            .prepare_cached(
                "UPDATE schedules SET paused_at_ms = NULL, resumed_at_ms = ?3, next_at_ms = ?4
             WHERE id = ?1 AND owner = ?2 AND paused_at_ms IS NOT NULL",
            )?
            .execute(params![id, owner, now_ms, next_at_ms])?;
        Ok(resumed == 1)
    }

    fn set_delivery_run(&self, schedule_id: i64, key: &str, run_id: i64) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE trigger_deliveries SET run_id = ?3 WHERE schedule_id = ?1 AND delivery = ?2")?
            .execute(params![schedule_id, key, run_id])?;
        Ok(())
    }

    fn delivery_run(&self, schedule_id: i64, key: &str) -> Result<Option<(i64, i64, i64)>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT r.id, t.id, t.conversation_id FROM trigger_deliveries d
                 JOIN schedule_runs r ON r.id = d.run_id JOIN turns t ON t.id = r.turn_id
                 WHERE d.schedule_id = ?1 AND d.delivery = ?2",
                params![schedule_id, key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?)
    }

    fn trigger(&self, token_hash: &str) -> Result<Option<(Schedule, String)>, StoreError> {
        let conn = self.conn();
        let found = conn
            .query_row(
                &format!("SELECT {SCHEDULE_COLUMNS}, s.secret FROM schedules s WHERE s.token_hash = ?1"),
                [token_hash],
                |row| Ok((schedule_of(row), row.get::<_, Option<String>>(SECRET_COLUMN)?)),
            )
            .optional()?;
        match found {
            Some((schedule, Some(secret))) => Ok(Some((schedule?, secret))),
            _ => Ok(None),
        }
    }

    fn note_delivery(&self, schedule_id: i64, key: &str, now_ms: i64) -> Result<bool, StoreError> {
        let conn = self.conn();
        conn.prepare_cached("DELETE FROM trigger_deliveries WHERE seen_at_ms < ?1")?
            .execute(params![now_ms - DELIVERY_MEMORY_MS])?;
        let added = conn
            .prepare_cached(
                "INSERT INTO trigger_deliveries (schedule_id, delivery, seen_at_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT DO NOTHING",
            )?
            .execute(params![schedule_id, key, now_ms])?;
        Ok(added == 1)
    }

    fn start_delivery(&self, schedule_id: i64) -> Result<i64, StoreError> {
        let conn = self.conn();
        conn.prepare_cached("INSERT INTO schedule_runs (schedule_id, started_at_ms) VALUES (?1, ?2)")?
            .execute(params![schedule_id, now_ms()])?;
        Ok(conn.last_insert_rowid())
    }

    fn set_run_turn(&self, run_id: i64, turn_id: i64) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE schedule_runs SET turn_id = ?2 WHERE id = ?1")?
            .execute(params![run_id, turn_id])?;
        Ok(())
    }

    fn set_run_error(&self, run_id: i64, error: &str) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE schedule_runs SET error = ?2 WHERE id = ?1")?
            .execute(params![run_id, error])?;
        Ok(())
    }

    fn schedule_runs(&self, schedule_id: i64, n: usize) -> Result<Vec<ScheduleRun>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM schedule_runs r LEFT JOIN turns t ON t.id = r.turn_id
             WHERE r.schedule_id = ?1 ORDER BY r.id DESC LIMIT ?2"
        ))?;
        let mut rows = stmt.query(params![schedule_id, limit(n)])?;
        let mut runs = Vec::new();
        while let Some(row) = rows.next()? {
            runs.push(run_of(row)?);
        }
        Ok(runs)
    }

    fn scheduled_turn(&self, turn_id: i64) -> Result<bool, StoreError> {
        Ok(self
            .conn()
            .query_row("SELECT EXISTS (SELECT 1 FROM schedule_runs WHERE turn_id = ?1)", [turn_id], |r| r.get(0))?)
    }
}

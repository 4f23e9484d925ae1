//! Schedules on PostgreSQL: a tick's claim is one statement (the conditional move of
//! `next_at_ms` and the run's row), so of several kernels claiming one tick, the one whose
//! update commits first wins and the others, re-reading the row, find it moved on.

use superpi_proto::event::now_ms;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::StoreError;
use crate::postgres::PostgresStore;
use crate::postgres::connection::wait;
use crate::schedules::{
    Columns, DELIVERY_MEMORY_MS, NewSchedule, RUN_COLUMNS, SCHEDULE_COLUMNS, SECRET_COLUMN, Schedule, ScheduleRun,
    Schedules, limit, run_of, schedule_of,
};

impl Columns for Row {
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn text(&self, i: usize) -> Result<String, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn flag(&self, i: usize) -> Result<bool, StoreError> {
        Ok(self.try_get(i)?)
    }
}

impl PostgresStore {
    fn schedules_where(&self, filter: &str, args: &[&(dyn ToSql + Sync)]) -> Result<Vec<Schedule>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(&format!("SELECT {SCHEDULE_COLUMNS} FROM schedules s WHERE {filter}"), args))?;
        rows.iter().map(schedule_of).collect()
    }
}

impl Schedules for PostgresStore {
    fn add_schedule(&self, s: &NewSchedule) -> Result<i64, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_one(
            "INSERT INTO schedules (owner, conversation_id, name, prompt, cron, timezone, token_hash, secret, ceiling,
                                    next_at_ms, created_by, created_at_ms, mode, catch_up, max_failures)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id",
            &[
                &s.owner,
                &s.conversation_id,
                &s.name,
                &s.prompt,
                &s.cron,
                &s.timezone,
                &s.token_hash,
                &s.secret,
                &s.ceiling,
                &s.next_at_ms,
                &s.created_by,
                &now_ms(),
                &s.how.mode,
                &s.how.catch_up,
                &limit(usize::try_from(s.how.max_failures).unwrap_or(usize::MAX)),
            ],
        ))?;
        Ok(row.try_get(0)?)
    }

    fn schedules(&self, owner: &str) -> Result<Vec<Schedule>, StoreError> {
        self.schedules_where("s.owner = $1 ORDER BY s.id", &[&owner])
    }

    fn schedule(&self, id: i64) -> Result<Option<Schedule>, StoreError> {
        Ok(self.schedules_where("s.id = $1", &[&id])?.pop())
    }

    fn remove_schedule(&self, owner: &str, id: i64) -> Result<bool, StoreError> {
        let client = self.client()?;
        // The runs go with it (ON DELETE CASCADE).
        let removed = wait(client.execute("DELETE FROM schedules WHERE id = $1 AND owner = $2", &[&id, &owner]))?;
        Ok(removed > 0)
    }

    fn due_schedules(&self, now_ms: i64, n: usize) -> Result<Vec<Schedule>, StoreError> {
        self.schedules_where(
            "s.next_at_ms IS NOT NULL AND s.next_at_ms <= $1 AND s.paused_at_ms IS NULL ORDER BY s.next_at_ms, s.id LIMIT $2",
            &[&now_ms, &limit(n)],
        )
    }

    fn next_tick(&self) -> Result<Option<i64>, StoreError> {
        let client = self.client()?;
        Ok(wait(client.query_one("SELECT MIN(next_at_ms) FROM schedules WHERE paused_at_ms IS NULL", &[]))?
            .try_get(0)?)
    }

    fn claim_tick(&self, schedule_id: i64, due_at_ms: i64, next_at_ms: Option<i64>) -> Result<Option<i64>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            "WITH claimed AS (
                 UPDATE schedules SET next_at_ms = $3 WHERE id = $1 AND next_at_ms = $2 RETURNING id)
             INSERT INTO schedule_runs (schedule_id, due_at_ms, started_at_ms)
             SELECT id, $2, $4 FROM claimed RETURNING id",
            &[&schedule_id, &due_at_ms, &next_at_ms, &now_ms()],
        ))?;
        row.map(|row| row.try_get(0)).transpose().map_err(StoreError::from)
    }

    fn skip_tick(&self, schedule_id: i64, due_at_ms: i64, next_at_ms: Option<i64>) -> Result<bool, StoreError> {
        let client = self.client()?;
        let moved = wait(client.execute(
            "UPDATE schedules SET next_at_ms = $3 WHERE id = $1 AND next_at_ms = $2",
            &[&schedule_id, &due_at_ms, &next_at_ms],
        ))?;
        Ok(moved == 1)
    }

    fn pause_schedule(&self, schedule_id: i64, now_ms: i64) -> Result<bool, StoreError> {
        let client = self.client()?;
        let paused = wait(client.execute(
            "UPDATE schedules SET paused_at_ms = $2 WHERE id = $1 AND paused_at_ms IS NULL",
            &[&schedule_id, &now_ms],
        ))?;
        Ok(paused == 1)
    }

    fn resume_schedule(&self, owner: &str, id: i64, now_ms: i64, next_at_ms: Option<i64>) -> Result<bool, StoreError> {
        let client = self.client()?;
        let resumed = wait(client.execute(
            "UPDATE schedules SET paused_at_ms = NULL, resumed_at_ms = $3, next_at_ms = $4
             WHERE id = $1 AND owner = $2 AND paused_at_ms IS NOT NULL",
            &[&id, &owner, &now_ms, &next_at_ms],
        ))?;
        Ok(resumed == 1)
    }

    fn set_delivery_run(&self, schedule_id: i64, key: &str, run_id: i64) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE trigger_deliveries SET run_id = $3 WHERE schedule_id = $1 AND delivery = $2",
            &[&schedule_id, &key, &run_id],
        ))?;
        Ok(())
    }

    fn delivery_run(&self, schedule_id: i64, key: &str) -> Result<Option<(i64, i64, i64)>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            "SELECT r.id, t.id, t.conversation_id FROM trigger_deliveries d
             JOIN schedule_runs r ON r.id = d.run_id JOIN turns t ON t.id = r.turn_id
             WHERE d.schedule_id = $1 AND d.delivery = $2",
            &[&schedule_id, &key],
        ))?;
        match row {
            Some(row) => Ok(Some((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?))),
            None => Ok(None),
        }
    }

    fn trigger(&self, token_hash: &str) -> Result<Option<(Schedule, String)>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            &format!("SELECT {SCHEDULE_COLUMNS}, s.secret FROM schedules s WHERE s.token_hash = $1"),
            &[&token_hash],
        ))?;
        let Some(row) = row else { return Ok(None) };
        let secret: Option<String> = row.try_get(SECRET_COLUMN)?;
        match secret {
            Some(secret) => Ok(Some((schedule_of(&row)?, secret))),
            None => Ok(None),
        }
    }

    fn note_delivery(&self, schedule_id: i64, key: &str, now_ms: i64) -> Result<bool, StoreError> {
        let client = self.client()?;
        wait(
            client.execute("DELETE FROM trigger_deliveries WHERE seen_at_ms < $1", &[&(now_ms - DELIVERY_MEMORY_MS)]),
        )?;
        let added = wait(client.execute(
            "INSERT INTO trigger_deliveries (schedule_id, delivery, seen_at_ms) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
            &[&schedule_id, &key, &now_ms],
        ))?;
        Ok(added == 1)
    }

    fn start_delivery(&self, schedule_id: i64) -> Result<i64, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_one(
            "INSERT INTO schedule_runs (schedule_id, started_at_ms) VALUES ($1, $2) RETURNING id",
            &[&schedule_id, &now_ms()],
        ))?;
        Ok(row.try_get(0)?)
    }

    fn set_run_turn(&self, run_id: i64, turn_id: i64) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute("UPDATE schedule_runs SET turn_id = $2 WHERE id = $1", &[&run_id, &turn_id]))?;
        Ok(())
    }

    fn set_run_error(&self, run_id: i64, error: &str) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute("UPDATE schedule_runs SET error = $2 WHERE id = $1", &[&run_id, &error]))?;
        Ok(())
    }

    fn schedule_runs(&self, schedule_id: i64, n: usize) -> Result<Vec<ScheduleRun>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            &format!(
                "SELECT {RUN_COLUMNS} FROM schedule_runs r LEFT JOIN turns t ON t.id = r.turn_id
                 WHERE r.schedule_id = $1 ORDER BY r.id DESC LIMIT $2"
            ),
            &[&schedule_id, &limit(n)],
        ))?;
        rows.iter().map(run_of).collect()
    }

    fn scheduled_turn(&self, turn_id: i64) -> Result<bool, StoreError> {
        let client = self.client()?;
        let row =
            wait(client.query_one("SELECT EXISTS (SELECT 1 FROM schedule_runs WHERE turn_id = $1)", &[&turn_id]))?;
        Ok(row.try_get(0)?)
    }
}

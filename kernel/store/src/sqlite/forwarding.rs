//! Forwarding on SQLite: the same tables and rules as PostgreSQL's, so the store suite is one
//! for both engines; the file is one kernel's, so nobody else reads them and nobody is told.

use rusqlite::{OptionalExtension, params};
use superpi_proto::event::now_ms;

use crate::forwarding::{Forwarding, JobKind, OpenQuestion, Watchers, count};
use crate::sqlite::SqliteStore;
use crate::{Lease, StoreError};

impl Forwarding for SqliteStore {
    fn open_question(&self, q: &OpenQuestion) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached(
                "INSERT INTO open_questions (request_id, conversation_id, owner, kind, remote_may_allow)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![q.request_id, q.conversation_id, q.owner, q.kind.as_str(), q.remote_may_allow])?;
        Ok(())
    }

    fn question(&self, request_id: &str) -> Result<Option<OpenQuestion>, StoreError> {
        let row: Option<(i64, String, String, bool)> = self
            .conn()
            .query_row(
                "SELECT conversation_id, owner, kind, remote_may_allow FROM open_questions
                 WHERE request_id = ?1 AND answer IS NULL",
                [request_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        row.map(|(conversation_id, owner, kind, remote_may_allow)| {
            OpenQuestion::stored(request_id, conversation_id, owner, &kind, remote_may_allow)
        })
        .transpose()
    }

    fn answer_question(&self, request_id: &str, answer: &str) -> Result<bool, StoreError> {
        let changed = self
            .conn()
            .prepare_cached("UPDATE open_questions SET answer = ?2 WHERE request_id = ?1 AND answer IS NULL")?
            .execute(params![request_id, answer])?;
        Ok(changed > 0)
    }

    fn answer_first(&self, request_id: &str, answer: &str) -> Result<bool, StoreError> {
        // One connection, one writer: nothing answers between these two statements.
        if self.answer_question(request_id, answer)? {
            return Ok(true);
        }
        let recorded: bool = self
            .conn()
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM open_questions WHERE request_id = ?1)")?
            .query_row([request_id], |r| r.get(0))?;
        Ok(!recorded)
    }

    fn take_answers(&self, conversation_id: i64) -> Result<Vec<(String, String)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "DELETE FROM open_questions WHERE conversation_id = ?1 AND answer IS NOT NULL RETURNING request_id, answer",
        )?;
        let taken = stmt.query_map([conversation_id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
        Ok(taken)
    }

    fn close_question(&self, request_id: &str) -> Result<(), StoreError> {
        self.conn().prepare_cached("DELETE FROM open_questions WHERE request_id = ?1")?.execute([request_id])?;
        Ok(())
    }

    fn set_watchers(
        &self,
        conversation_id: i64,
        kernel: &str,
        watchers: Watchers,
        ttl_ms: i64,
    ) -> Result<(), StoreError> {
        let conn = self.conn();
        if watchers.is_empty() {
            conn.prepare_cached("DELETE FROM remote_watchers WHERE conversation_id = ?1 AND kernel = ?2")?
                .execute(params![conversation_id, kernel])?;
            return Ok(());
        }
        conn.prepare_cached(
            "INSERT INTO remote_watchers (conversation_id, kernel, watching, interactive, readers, expires_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (conversation_id, kernel) DO UPDATE SET watching = excluded.watching,
                 interactive = excluded.interactive, readers = excluded.readers,
                 expires_at_ms = excluded.expires_at_ms",
        )?
        .execute(params![
            conversation_id,
            kernel,
            watchers.watching,
            watchers.interactive,
            watchers.readers,
            now_ms().saturating_add(ttl_ms)
        ])?;
        Ok(())
    }

    fn renew_watchers(&self, kernel: &str, ttl_ms: i64) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE remote_watchers SET expires_at_ms = ?2 WHERE kernel = ?1")?
            .execute(params![kernel, now_ms().saturating_add(ttl_ms)])?;
        Ok(())
    }

    fn watchers_elsewhere(&self, conversation_id: i64, kernel: &str) -> Result<Watchers, StoreError> {
        let (watching, interactive, readers): (i64, i64, i64) = self
            .conn()
            .prepare_cached(
                "SELECT COALESCE(SUM(watching), 0), COALESCE(SUM(interactive), 0), COALESCE(SUM(readers), 0)
             FROM remote_watchers WHERE conversation_id = ?1 AND kernel <> ?2 AND expires_at_ms > ?3",
            )?
            .query_row(params![conversation_id, kernel, now_ms()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(Watchers { watching: count(watching), interactive: count(interactive), readers: count(readers) })
    }

    fn running(&self, conversation_ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM turns WHERE conversation_id = ?1 AND status = 'running')")?;
        let mut running = Vec::new();
        for &id in conversation_ids {
            if stmt.query_row([id], |r| r.get::<_, bool>(0))? {
                running.push(id);
            }
        }
        running.sort_unstable();
        running.dedup();
        Ok(running)
    }

    fn tell_live(&self, _conversation_id: i64, _events: &[(u64, String)]) -> Result<(), StoreError> {
        Ok(())
    }

    fn queue_job(&self, conversation_id: i64, kind: JobKind) -> Result<i64, StoreError> {
        let conn = self.conn();
        conn.prepare_cached("INSERT INTO forwarded_jobs (conversation_id, kind, created_at_ms) VALUES (?1, ?2, ?3)")?
            .execute(params![conversation_id, kind.as_str(), now_ms()])?;
        Ok(conn.last_insert_rowid())
    }

    fn take_jobs(&self, conversation_id: i64, lease: &Lease) -> Result<Vec<(i64, JobKind)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "UPDATE forwarded_jobs SET taken = 1
             WHERE conversation_id = ?1 AND taken = 0 AND answer IS NULL AND EXISTS (
                 SELECT 1 FROM conversation_leases l WHERE l.conversation_id = ?1 AND l.owner = ?2 AND l.generation = ?3)
             RETURNING id, kind",
        )?;
        let rows = stmt.query_map(params![conversation_id, lease.owner, lease.generation], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut jobs = Vec::new();
        for row in rows {
            let (id, kind) = row?;
            jobs.push((id, JobKind::parse(&kind)?));
        }
        jobs.sort_unstable_by_key(|(id, _)| *id);
        Ok(jobs)
    }

    fn answer_job(&self, job_id: i64, answer: &str) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE forwarded_jobs SET answer = ?2 WHERE id = ?1")?
            .execute(params![job_id, answer])?;
        Ok(())
    }

    fn take_job_answer(&self, job_id: i64) -> Result<Option<String>, StoreError> {
        let answer = self
            .conn()
            .query_row(
                "DELETE FROM forwarded_jobs WHERE id = ?1 AND answer IS NOT NULL RETURNING answer",
                [job_id],
                |r| r.get(0),
            )
            .optional()?;
        Ok(answer)
    }
}

//! Forwarding on PostgreSQL: open questions and remote watchers in their tables, an answer
//! told to the holder through NOTIFY in the statement that stores it. Times are the server's
//! clock, like the leases'.

use tokio_postgres::Row;

use crate::forwarding::{Forwarding, JobKind, OpenQuestion, Watchers, count};
use crate::live;
use crate::postgres::PostgresStore;
use crate::postgres::connection::wait;
use crate::postgres::leases::NOW_MS;
use crate::{Lease, Notice, StoreError};

fn to_question(request_id: &str, row: &Row) -> Result<OpenQuestion, StoreError> {
    let kind: String = row.try_get(2)?;
    OpenQuestion::stored(request_id, row.try_get(0)?, row.try_get(1)?, &kind, row.try_get(3)?)
}

impl Forwarding for PostgresStore {
    fn open_question(&self, q: &OpenQuestion) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            "INSERT INTO open_questions (request_id, conversation_id, owner, kind, remote_may_allow)
             VALUES ($1, $2, $3, $4, $5)",
            &[&q.request_id, &q.conversation_id, &q.owner, &q.kind.as_str(), &q.remote_may_allow],
        ))?;
        Ok(())
    }

    fn question(&self, request_id: &str) -> Result<Option<OpenQuestion>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            "SELECT conversation_id, owner, kind, remote_may_allow FROM open_questions
             WHERE request_id = $1 AND answer IS NULL",
            &[&request_id],
        ))?;
        row.map(|row| to_question(request_id, &row)).transpose()
    }

    fn answer_question(&self, request_id: &str, answer: &str) -> Result<bool, StoreError> {
        let client = self.client()?;
        // One statement: the answer and the holder's notice (`Notice::Answer`) commit together.
        let rows = wait(client.query(
            "WITH answered AS (
                 UPDATE open_questions SET answer = $2 WHERE request_id = $1 AND answer IS NULL
                 RETURNING conversation_id)
             SELECT pg_notify('superpi', 'answer ' || conversation_id) FROM answered",
            &[&request_id, &answer],
        ))?;
        Ok(!rows.is_empty())
    }

    fn answer_first(&self, request_id: &str, answer: &str) -> Result<bool, StoreError> {
        let client = self.client()?;
        // The NOT EXISTS reads the row as it was before the update: answered already, or not
        // recorded at all. A concurrent answer's update is waited for, then finds it answered.
        let row = wait(client.query_one(
            "WITH answered AS (
                 UPDATE open_questions SET answer = $2 WHERE request_id = $1 AND answer IS NULL RETURNING 1)
             SELECT EXISTS (SELECT 1 FROM answered)
                 OR NOT EXISTS (SELECT 1 FROM open_questions WHERE request_id = $1)",
            &[&request_id, &answer],
        ))?;
        Ok(row.try_get(0)?)
    }

    fn take_answers(&self, conversation_id: i64) -> Result<Vec<(String, String)>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            "DELETE FROM open_questions WHERE conversation_id = $1 AND answer IS NOT NULL RETURNING request_id, answer",
            &[&conversation_id],
        ))?;
        rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect()
    }

    fn close_question(&self, request_id: &str) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute("DELETE FROM open_questions WHERE request_id = $1", &[&request_id]))?;
        Ok(())
    }

    fn set_watchers(
        &self,
        conversation_id: i64,
        kernel: &str,
        watchers: Watchers,
        ttl_ms: i64,
    ) -> Result<(), StoreError> {
        let client = self.client()?;
        if watchers.is_empty() {
            let notice = Notice::Watchers { conversation_id }.payload();
            wait(client.execute(
                "WITH gone AS (DELETE FROM remote_watchers WHERE conversation_id = $1 AND kernel = $2 RETURNING 1)
                 SELECT pg_notify('superpi', $3) FROM gone",
                &[&conversation_id, &kernel, &notice],
            ))?;
            return Ok(());
        }
        // Its holder is told in the same statement: it sends its deltas while anyone watches.
        let notice = Notice::Watchers { conversation_id }.payload();
        wait(client.execute(
            &format!(
                "WITH said AS (
                     INSERT INTO remote_watchers (conversation_id, kernel, watching, interactive, readers, expires_at_ms)
                     VALUES ($1, $2, $3, $4, $5, {NOW_MS} + $6)
                     ON CONFLICT (conversation_id, kernel) DO UPDATE SET watching = excluded.watching,
                         interactive = excluded.interactive, readers = excluded.readers,
                         expires_at_ms = excluded.expires_at_ms
                     RETURNING 1)
                 SELECT pg_notify('superpi', $7) FROM said"
            ),
            &[
                &conversation_id,
                &kernel,
                &i64::from(watchers.watching),
                &i64::from(watchers.interactive),
                &i64::from(watchers.readers),
                &ttl_ms,
                &notice,
            ],
        ))?;
        Ok(())
    }

    fn renew_watchers(&self, kernel: &str, ttl_ms: i64) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute(
            &format!("UPDATE remote_watchers SET expires_at_ms = {NOW_MS} + $2 WHERE kernel = $1"),
            &[&kernel, &ttl_ms],
        ))?;
        Ok(())
    }

    fn watchers_elsewhere(&self, conversation_id: i64, kernel: &str) -> Result<Watchers, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_one(
            &format!(
                "SELECT COALESCE(SUM(watching), 0)::BIGINT, COALESCE(SUM(interactive), 0)::BIGINT,
                        COALESCE(SUM(readers), 0)::BIGINT
                 FROM remote_watchers WHERE conversation_id = $1 AND kernel <> $2 AND expires_at_ms > {NOW_MS}"
            ),
            &[&conversation_id, &kernel],
        ))?;
        Ok(Watchers {
            watching: count(row.try_get(0)?),
            interactive: count(row.try_get(1)?),
            readers: count(row.try_get(2)?),
        })
    }

    fn running(&self, conversation_ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        if conversation_ids.is_empty() {
            return Ok(Vec::new());
        }
        let client = self.client()?;
        let rows = wait(client.query(
            "SELECT DISTINCT conversation_id FROM turns WHERE status = 'running' AND conversation_id = ANY($1)
             ORDER BY 1",
            &[&conversation_ids],
        ))?;
        rows.iter().map(|row| Ok(row.try_get(0)?)).collect()
    }

    fn tell_live(&self, conversation_id: i64, events: &[(u64, String)]) -> Result<(), StoreError> {
        let payloads = live::payloads(conversation_id, events);
        if payloads.is_empty() {
            return Ok(());
        }
        let mut client = self.client()?;
        wait(async {
            let notify = client.prepared(crate::postgres::NOTIFY_ALL).await?;
            client.execute(&notify, &[&payloads]).await?;
            Ok(())
        })
    }

    fn queue_job(&self, conversation_id: i64, kind: JobKind) -> Result<i64, StoreError> {
        let client = self.client()?;
        let notice = Notice::Job { conversation_id }.payload();
        let row = wait(client.query_one(
            "WITH queued AS (
                 INSERT INTO forwarded_jobs (conversation_id, kind, created_at_ms) VALUES ($1, $2, $3) RETURNING id)
             SELECT id, pg_notify('superpi', $4) FROM queued",
            &[&conversation_id, &kind.as_str(), &superpi_proto::event::now_ms(), &notice],
        ))?;
        Ok(row.try_get(0)?)
    }

    fn take_jobs(&self, conversation_id: i64, lease: &Lease) -> Result<Vec<(i64, JobKind)>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            "UPDATE forwarded_jobs j SET taken = TRUE FROM conversation_leases l
             WHERE j.conversation_id = $1 AND NOT j.taken AND j.answer IS NULL
                   AND l.conversation_id = j.conversation_id AND l.owner = $2 AND l.generation = $3
             RETURNING j.id, j.kind",
            &[&conversation_id, &lease.owner, &lease.generation],
        ))?;
        let mut jobs = Vec::with_capacity(rows.len());
        for row in rows {
            let kind: String = row.try_get(1)?;
            jobs.push((row.try_get(0)?, JobKind::parse(&kind)?));
        }
        jobs.sort_unstable_by_key(|(id, _)| *id);
        Ok(jobs)
    }

    fn answer_job(&self, job_id: i64, answer: &str) -> Result<(), StoreError> {
        let client = self.client()?;
        let notice = Notice::JobDone.payload();
        wait(client.execute(
            "WITH answered AS (UPDATE forwarded_jobs SET answer = $2 WHERE id = $1 RETURNING 1)
             SELECT pg_notify('superpi', $3) FROM answered",
            &[&job_id, &answer, &notice],
        ))?;
        Ok(())
    }

    fn take_job_answer(&self, job_id: i64) -> Result<Option<String>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            "DELETE FROM forwarded_jobs WHERE id = $1 AND answer IS NOT NULL RETURNING answer",
            &[&job_id],
        ))?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }
}

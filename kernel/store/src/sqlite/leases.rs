//! Leases and forwarded submits on SQLite. The file is one kernel's (its data directory's
//! lock), so a lease here only ever changes hands across that kernel's restarts; the same rules
//! as PostgreSQL's keep the store suite one for both engines.

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use superpi_proto::Message;
use superpi_proto::event::now_ms;

use crate::sqlite::SqliteStore;
use crate::{
    Claim, InterruptedTurn, Lease, Leases, Notice, QueuedSubmit, StoreError, interrupted_turn, stored_prompt, to_json,
};

/// Refuses a commit whose lease was taken over (inside the commit's transaction).
pub(crate) fn check(tx: &Transaction<'_>, conversation_id: i64, lease: &Lease) -> Result<(), StoreError> {
    let held = tx
        .query_row(
            "SELECT 1 FROM conversation_leases WHERE conversation_id = ?1 AND owner = ?2 AND generation = ?3",
            params![conversation_id, lease.owner, lease.generation],
            |_| Ok(()),
        )
        .optional()?;
    held.ok_or(StoreError::Fenced(conversation_id))
}

/// The turns a former holder left running or queued in its memory (not those queued in the
/// database for the next holder). Their status stays until the new holder stores each one's
/// end with it, so a holder that dies before that leaves them to the next claim.
fn left_unfinished(tx: &Transaction<'_>, conversation_id: i64) -> Result<Vec<InterruptedTurn>, StoreError> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, status, prompt FROM turns WHERE conversation_id = ?1 AND status IN ('running', 'queued')
         AND id NOT IN (SELECT turn_id FROM queued_submits) ORDER BY id",
    )?;
    let rows = stmt
        .query_map([conversation_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<String>>(2)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter()
        .map(|(turn_id, status, prompt)| interrupted_turn(conversation_id, turn_id, &status, prompt))
        .collect()
}

impl Leases for SqliteStore {
    fn shared(&self) -> bool {
        false
    }

    fn claim(&self, conversation_id: i64, kernel: &str, ttl_ms: i64) -> Result<Claim, StoreError> {
        let now = now_ms();
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let held: Option<(String, i64, i64)> = tx
            .query_row(
                "SELECT owner, generation, expires_at_ms FROM conversation_leases WHERE conversation_id = ?1",
                [conversation_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        if let Some((owner, _, expires)) = &held
            && owner != kernel
            && *expires > now
        {
            return Ok(Claim::Held { owner: owner.clone() });
        }
        let generation = held.map_or(1, |(_, generation, _)| generation + 1);
        tx.prepare_cached("INSERT INTO conversation_leases (conversation_id, owner, generation, expires_at_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (conversation_id) DO UPDATE
             SET owner = excluded.owner, generation = excluded.generation, expires_at_ms = excluded.expires_at_ms")?.execute(
            params![conversation_id, kernel, generation, now.saturating_add(ttl_ms)],
        )?;
        let interrupted = left_unfinished(&tx, conversation_id)?;
        // The former holder's questions died with it.
        tx.prepare_cached("DELETE FROM open_questions WHERE conversation_id = ?1")?.execute([conversation_id])?;
        // The jobs it took and did not answer run again under the new holder.
        tx.prepare_cached("UPDATE forwarded_jobs SET taken = 0 WHERE conversation_id = ?1 AND answer IS NULL")?
            .execute([conversation_id])?;
        tx.commit()?;
        Ok(Claim::Taken { lease: Lease { owner: kernel.to_string(), generation }, interrupted })
    }

    fn renew(&self, kernel: &str, ttl_ms: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "UPDATE conversation_leases SET expires_at_ms = ?2 WHERE owner = ?1 RETURNING conversation_id, generation",
        )?;
        let held = stmt
            .query_map(params![kernel, now_ms().saturating_add(ttl_ms)], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(held)
    }

    fn release(&self, conversation_id: i64, lease: &Lease) -> Result<bool, StoreError> {
        let conn = self.conn();
        conn.prepare_cached(
            "UPDATE conversation_leases SET owner = '', expires_at_ms = 0
             WHERE conversation_id = ?1 AND owner = ?2 AND generation = ?3",
        )?
        .execute(params![conversation_id, lease.owner, lease.generation])?;
        let queued: bool = conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM queued_submits WHERE conversation_id = ?1)")?
            .query_row([conversation_id], |r| r.get(0))?;
        Ok(queued)
    }

    fn release_all(&self, kernel: &str) -> Result<(), StoreError> {
        self.conn()
            .execute("UPDATE conversation_leases SET owner = '', expires_at_ms = 0 WHERE owner = ?1", [kernel])?;
        Ok(())
    }

    fn expire_all(&self) -> Result<(), StoreError> {
        self.conn().prepare_cached("UPDATE conversation_leases SET expires_at_ms = 0")?.execute([])?;
        Ok(())
    }

    fn orphans(&self) -> Result<Vec<i64>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT conversation_id FROM turns WHERE status IN ('running', 'queued')
             UNION SELECT conversation_id FROM queued_submits
             EXCEPT SELECT conversation_id FROM conversation_leases WHERE expires_at_ms > ?1
             ORDER BY 1",
        )?;
        let ids = stmt.query_map([now_ms()], |r| r.get(0))?.collect::<Result<Vec<_>, _>>()?;
        Ok(ids)
    }

    fn queue_submit(
        &self,
        conversation_id: i64,
        prompt: &Message,
        ceiling: &str,
        steer: bool,
    ) -> Result<i64, StoreError> {
        let json = to_json(prompt)?;
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.prepare_cached(
            "INSERT INTO turns (conversation_id, status, prompt, created_at_ms) VALUES (?1, 'queued', ?2, ?3)",
        )?
        .execute(params![conversation_id, json, now_ms()])?;
        let turn_id = tx.last_insert_rowid();
        tx.prepare_cached(
            "INSERT INTO queued_submits (turn_id, conversation_id, ceiling, steer) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![turn_id, conversation_id, ceiling, steer])?;
        tx.commit()?;
        Ok(turn_id)
    }

    fn take_queued(&self, conversation_id: i64, lease: &Lease) -> Result<Vec<QueuedSubmit>, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let rows = {
            let mut stmt = tx.prepare_cached(
                "SELECT q.turn_id, t.prompt, q.ceiling, q.steer FROM queued_submits q
                 JOIN turns t ON t.id = q.turn_id
                 JOIN conversation_leases l ON l.conversation_id = q.conversation_id
                 WHERE q.conversation_id = ?1 AND l.owner = ?2 AND l.generation = ?3 ORDER BY q.turn_id",
            )?;
            stmt.query_map(params![conversation_id, lease.owner, lease.generation], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, String>(2)?, r.get::<_, bool>(3)?))
            })?
            .collect::<Result<Vec<_>, _>>()?
        };
        let mut taken = Vec::with_capacity(rows.len());
        for (turn_id, prompt, ceiling, steer) in rows {
            tx.prepare_cached("DELETE FROM queued_submits WHERE turn_id = ?1")?.execute([turn_id])?;
            let prompt = stored_prompt(turn_id, prompt.as_deref().unwrap_or("null"))?;
            taken.push(QueuedSubmit { turn_id, prompt, ceiling, steer });
        }
        tx.commit()?;
        Ok(taken)
    }

    fn notify(&self, _notice: Notice) -> Result<(), StoreError> {
        // One kernel per file: nobody else to tell.
        Ok(())
    }

    fn notices(&self) -> Option<tokio::sync::broadcast::Receiver<crate::Heard>> {
        None
    }
}

//! Leases, forwarded submits and notices on PostgreSQL, the database several kernels share.
//! Lease times are the server's clock, so the kernels' clocks need not agree. Notices go
//! through LISTEN/NOTIFY on the `superpi` channel: a commit notifies its event, a forwarded
//! submit its conversation; one connection per kernel listens (opened again when it breaks,
//! then `Missed` says that something may have been lost meanwhile).

use std::task::Poll;
use std::time::Duration;

use superpi_proto::Message;
use superpi_proto::event::now_ms;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, Client, Connection, Transaction};

use crate::postgres::PostgresStore;
use crate::postgres::connection::{Target, wait};
use crate::{
    Claim, Heard, InterruptedTurn, Lease, Leases, Notice, QueuedSubmit, StoreError, interrupted_turn, stored_prompt,
    to_json,
};

/// Notices a kernel may fall behind by before it is told it missed some.
pub(crate) const NOTICE_BACKLOG: usize = 16384;

/// The server's clock in milliseconds since the epoch.
pub(crate) const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// The commit's lease check: the row stays share-locked until the commit ends, so a claim
/// (which updates it) waits for the commit, and a commit after a claim sees the new generation.
pub(crate) const LEASE_CHECK: &str =
    "SELECT 1 FROM conversation_leases WHERE conversation_id = $1 AND owner = $2 AND generation = $3 FOR SHARE";

/// The turns a former holder left running or queued in its memory (not those queued in the
/// database for the next holder). Their status stays until the new holder stores each one's
/// end with it, so a holder that dies before that leaves them to the next claim.
async fn left_unfinished(tx: &Transaction<'_>, conversation_id: i64) -> Result<Vec<InterruptedTurn>, StoreError> {
    let rows = tx
        .query(
            "SELECT id, status, prompt FROM turns WHERE conversation_id = $1 AND status IN ('running', 'queued')
             AND id NOT IN (SELECT turn_id FROM queued_submits) ORDER BY id",
            &[&conversation_id],
        )
        .await?;
    rows.iter()
        .map(|row| {
            interrupted_turn(conversation_id, row.try_get(0)?, row.try_get::<_, String>(1)?.as_str(), row.try_get(2)?)
        })
        .collect()
}

impl Leases for PostgresStore {
    fn shared(&self) -> bool {
        true
    }

    fn claim(&self, conversation_id: i64, kernel: &str, ttl_ms: i64) -> Result<Claim, StoreError> {
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            let taken = tx
                .query_opt(
                    &format!(
                        "INSERT INTO conversation_leases (conversation_id, owner, generation, expires_at_ms)
                         VALUES ($1, $2, 1, {NOW_MS} + $3)
                         ON CONFLICT (conversation_id) DO UPDATE SET owner = excluded.owner,
                             generation = conversation_leases.generation + 1, expires_at_ms = excluded.expires_at_ms
                         WHERE conversation_leases.owner = excluded.owner OR conversation_leases.expires_at_ms <= {NOW_MS}
                         RETURNING generation"
                    ),
                    &[&conversation_id, &kernel, &ttl_ms],
                )
                .await?;
            let Some(taken) = taken else {
                let owner = tx
                    .query_opt("SELECT owner FROM conversation_leases WHERE conversation_id = $1", &[&conversation_id])
                    .await?;
                let owner = owner.map(|row| row.try_get(0)).transpose()?.unwrap_or_default();
                return Ok(Claim::Held { owner });
            };
            let generation: i64 = taken.try_get(0)?;
            let interrupted = left_unfinished(&tx, conversation_id).await?;
            // The former holder's questions died with it.
            tx.execute("DELETE FROM open_questions WHERE conversation_id = $1", &[&conversation_id]).await?;
            // The jobs it took and did not answer run again under the new holder.
            tx.execute(
                "UPDATE forwarded_jobs SET taken = FALSE WHERE conversation_id = $1 AND answer IS NULL",
                &[&conversation_id],
            )
            .await?;
            tx.commit().await?;
            Ok(Claim::Taken { lease: Lease { owner: kernel.to_string(), generation }, interrupted })
        })
    }

    fn renew(&self, kernel: &str, ttl_ms: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            &format!(
                "UPDATE conversation_leases SET expires_at_ms = {NOW_MS} + $2 WHERE owner = $1
                 RETURNING conversation_id, generation"
            ),
            &[&kernel, &ttl_ms],
        ))?;
        rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect()
    }

    fn release(&self, conversation_id: i64, lease: &Lease) -> Result<bool, StoreError> {
        let client = self.client()?;
        wait(async {
            client
                .execute(
                    "UPDATE conversation_leases SET owner = '', expires_at_ms = 0
                     WHERE conversation_id = $1 AND owner = $2 AND generation = $3",
                    &[&conversation_id, &lease.owner, &lease.generation],
                )
                .await?;
            let row = client
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM queued_submits WHERE conversation_id = $1)",
                    &[&conversation_id],
                )
                .await?;
            Ok(row.try_get(0)?)
        })
    }

    fn release_all(&self, kernel: &str) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(
            client.execute("UPDATE conversation_leases SET owner = '', expires_at_ms = 0 WHERE owner = $1", &[&kernel]),
        )?;
        Ok(())
    }

    fn expire_all(&self) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute("UPDATE conversation_leases SET expires_at_ms = 0", &[]))?;
        Ok(())
    }

    fn orphans(&self) -> Result<Vec<i64>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            &format!(
                "SELECT conversation_id FROM turns WHERE status IN ('running', 'queued')
                 UNION SELECT conversation_id FROM queued_submits
                 EXCEPT SELECT conversation_id FROM conversation_leases WHERE expires_at_ms > {NOW_MS}
                 ORDER BY 1"
            ),
            &[],
        ))?;
        rows.iter().map(|row| Ok(row.try_get(0)?)).collect()
    }

    fn queue_submit(
        &self,
        conversation_id: i64,
        prompt: &Message,
        ceiling: &str,
        steer: bool,
    ) -> Result<i64, StoreError> {
        let json = to_json(prompt)?;
        let notice = Notice::Submit { conversation_id }.payload();
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            let row = tx
                .query_one(
                    "INSERT INTO turns (conversation_id, status, prompt, created_at_ms) VALUES ($1, 'queued', $2, $3)
                     RETURNING id",
                    &[&conversation_id, &json, &now_ms()],
                )
                .await?;
            let turn_id: i64 = row.try_get(0)?;
            tx.execute(
                "INSERT INTO queued_submits (turn_id, conversation_id, ceiling, steer) VALUES ($1, $2, $3, $4)",
                &[&turn_id, &conversation_id, &ceiling, &steer],
            )
            .await?;
            tx.execute("SELECT pg_notify('superpi', $1)", &[&notice]).await?;
            tx.commit().await?;
            Ok(turn_id)
        })
    }

    fn take_queued(&self, conversation_id: i64, lease: &Lease) -> Result<Vec<QueuedSubmit>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            "DELETE FROM queued_submits q USING conversation_leases l, turns t
             WHERE q.conversation_id = $1 AND l.conversation_id = q.conversation_id AND l.owner = $2
                   AND l.generation = $3 AND t.id = q.turn_id
             RETURNING q.turn_id, t.prompt, q.ceiling, q.steer",
            &[&conversation_id, &lease.owner, &lease.generation],
        ))?;
        let mut taken = Vec::with_capacity(rows.len());
        for row in rows {
            let turn_id: i64 = row.try_get(0)?;
            let prompt: Option<String> = row.try_get(1)?;
            let prompt = stored_prompt(turn_id, prompt.as_deref().unwrap_or("null"))?;
            taken.push(QueuedSubmit { turn_id, prompt, ceiling: row.try_get(2)?, steer: row.try_get(3)? });
        }
        taken.sort_by_key(|q| q.turn_id);
        Ok(taken)
    }

    fn notify(&self, notice: Notice) -> Result<(), StoreError> {
        let client = self.client()?;
        wait(client.execute("SELECT pg_notify('superpi', $1)", &[&notice.payload()]))?;
        Ok(())
    }

    fn notices(&self) -> Option<broadcast::Receiver<Heard>> {
        Some(self.heard.subscribe())
    }
}

/// How long the listener waits before connecting again after its connection broke.
const LISTEN_RETRY: Duration = Duration::from_secs(1);

/// The listening connection, for the store's life (a task on the store's thread, which ends
/// with the store): heard notices go to `notices`, and after each (re)connection `Missed`.
pub(crate) async fn listen(target: Target, heard: broadcast::Sender<Heard>) {
    loop {
        let ended = match target.config.connect(target.tls.clone()).await {
            Ok((client, connection)) => listen_on(client, connection, &heard).await,
            Err(err) => Err(err.into()),
        };
        if let Err(err) = ended {
            tracing::warn!("listening for other kernels' notices: {err}; connecting again");
        }
        tokio::time::sleep(LISTEN_RETRY).await;
    }
}

/// Listens on one connection until it ends.
async fn listen_on<S, T>(
    client: Client,
    mut connection: Connection<S, T>,
    heard: &broadcast::Sender<Heard>,
) -> Result<(), StoreError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let said = heard.clone();
    let mut assembler = crate::live::Assembler::default();
    let messages = tokio::spawn(futures::future::poll_fn(move |cx| {
        loop {
            match connection.poll_message(cx) {
                Poll::Ready(Some(Ok(AsyncMessage::Notification(n)))) => {
                    let payload = n.payload();
                    if crate::live::is_live(payload) {
                        if let Some(batch) = assembler.heard(payload) {
                            let _ = said.send(Heard::Live(std::sync::Arc::new(batch)));
                        }
                    } else if let Some(notice) = Notice::parse(payload) {
                        let _ = said.send(Heard::Notice(notice));
                    }
                }
                Poll::Ready(Some(Ok(_))) => {}
                Poll::Ready(Some(Err(err))) => return Poll::Ready(Err(StoreError::from(err))),
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }));
    client.batch_execute("LISTEN superpi").await?;
    // What was said before this connection listened is lost: everyone looks again.
    let _ = heard.send(Heard::Notice(Notice::Missed));
    let ended = messages.await.map_err(|e| StoreError::Postgres(format!("the listening connection: {e}")))?;
    drop(client);
    ended
}

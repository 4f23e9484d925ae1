//! Artifacts on PostgreSQL: `artifacts`, one row a conversation's file, its bytes a BYTEA. A
//! write locks its conversation's row first, so two kernels' (or two calls') counts and
//! inserts for one conversation take turns.

use tokio_postgres::Row;

use crate::StoreError;
use crate::artifacts::{ARTIFACT_COLUMNS, ArtifactRow, Artifacts, NewArtifact};
use crate::postgres::PostgresStore;
use crate::postgres::connection::wait;

fn to_row(row: &Row) -> Result<ArtifactRow, StoreError> {
    Ok(ArtifactRow {
        conversation_id: row.try_get(0)?,
        name: row.try_get(1)?,
        media_type: row.try_get(2)?,
        size: row.try_get::<_, i64>(3)? as u64,
        created_at_ms: row.try_get(4)?,
    })
}

impl Artifacts for PostgresStore {
    fn put_artifact(&self, new: &NewArtifact<'_>, most: usize) -> Result<Option<ArtifactRow>, StoreError> {
        let mut client = self.client()?;
        let size = new.bytes.len() as i64;
        wait(async {
            let tx = client.transaction().await?;
            tx.execute("SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE", &[&new.conversation_id]).await?;
            let others: i64 = tx
                .query_one(
                    "SELECT count(*) FROM artifacts WHERE conversation_id = $1 AND name <> $2",
                    &[&new.conversation_id, &new.name],
                )
                .await?
                .try_get(0)?;
            if others as usize >= most {
                return Ok(None);
            }
            tx.execute(
                "INSERT INTO artifacts (conversation_id, name, media_type, size, bytes, created_at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (conversation_id, name) DO UPDATE SET media_type = excluded.media_type,
                     size = excluded.size, bytes = excluded.bytes, created_at_ms = excluded.created_at_ms",
                &[&new.conversation_id, &new.name, &new.media_type, &size, &new.bytes, &new.created_at_ms],
            )
            .await?;
            tx.commit().await?;
            Ok(Some(crate::artifacts::row_of(new)))
        })
    }

    fn artifact(&self, conversation_id: i64, name: &str) -> Result<Option<(ArtifactRow, Vec<u8>)>, StoreError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            &format!(
                "SELECT {ARTIFACT_COLUMNS}, a.bytes FROM artifacts a WHERE a.conversation_id = $1 AND a.name = $2"
            ),
            &[&conversation_id, &name],
        ))?;
        row.map(|row| Ok((to_row(&row)?, row.try_get(5)?))).transpose()
    }

    fn artifacts(&self, owner: &str, conversation_id: Option<i64>) -> Result<Vec<ArtifactRow>, StoreError> {
        let client = self.client()?;
        let rows = wait(client.query(
            &format!(
                "SELECT {ARTIFACT_COLUMNS} FROM artifacts a JOIN conversations c ON c.id = a.conversation_id
                 WHERE c.owner = $1 AND ($2::BIGINT IS NULL OR a.conversation_id = $2)
                 ORDER BY a.created_at_ms DESC, a.name"
            ),
            &[&owner, &conversation_id],
        ))?;
        rows.iter().map(to_row).collect()
    }
}

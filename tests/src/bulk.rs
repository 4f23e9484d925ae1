//! Many stored conversations at once, for the store's scale benchmark (src/bin/store_bench.rs)
//! and its small test (tests/tests/store_scale.rs): copies of the one conversation a real turn
//! left in a SQLite store, written straight into that store in large transactions (SQL
//! `INSERT ... SELECT`, each copy with its own ids and an older time), so a million take
//! seconds rather than a million turns through the model.
//!
//! Copy `k` (1..=copies) of template conversation `T` (its turn `U`) is conversation `T + k`
//! with turn `U + k`, updated `copies + 1 - k` seconds before the template was created: the
//! copies are older than the template, and a lower id is older. Every column is copied as it
//! is but the ids, the times and the ids inside the stored events' JSON, read from the schema,
//! so a later migration's columns are copied too.

use std::path::Path;

use rusqlite::{Connection, params};

/// The conversation the copies were made from.
#[derive(Debug, Clone, Copy)]
pub struct Template {
    pub conversation: i64,
    pub turn: i64,
}

impl Template {
    /// Copy `k`'s conversation id.
    pub fn copy(&self, k: u64) -> i64 {
        self.conversation + k as i64
    }
}

/// Writes `copies` copies of the only conversation in the SQLite store at `db` (its kernel
/// stopped), `batch` copies a transaction.
pub fn copy_conversation(db: &Path, copies: u64, batch: u64) -> rusqlite::Result<Template> {
    let conn = Connection::open(db)?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    let conversation: i64 = conn.query_row("SELECT id FROM conversations", [], |r| r.get(0))?;
    let turn: i64 = conn.query_row("SELECT id FROM turns WHERE conversation_id = ?1", [conversation], |r| r.get(0))?;
    let statements = [
        copy_statement(&conn, "conversations", "id", conversation, turn)?,
        copy_statement(&conn, "turns", "conversation_id", conversation, turn)?,
        copy_statement(&conn, "entries", "conversation_id", conversation, turn)?,
        copy_statement(&conn, "events", "conversation_id", conversation, turn)?,
    ];
    let mut first = 1;
    while first <= copies {
        let last = (first + batch - 1).min(copies);
        let tx = conn.unchecked_transaction()?;
        for sql in &statements {
            tx.prepare_cached(sql)?.execute(params![first as i64, last as i64, copies as i64])?;
        }
        tx.commit()?;
        first = last + 1;
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    Ok(Template { conversation, turn })
}

/// `INSERT INTO table SELECT ...` of the template's rows once for each `k` in ?1..=?2 (of ?3
/// copies), column by column from the table's schema.
fn copy_statement(conn: &Connection, table: &str, key: &str, conversation: i64, turn: i64) -> rusqlite::Result<String> {
    let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid"))?;
    let columns = stmt.query_map([], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
    let older = |column: &str| format!("t.{column} - (?3 + 1 - k.i) * 1000");
    let expressions: Vec<String> = columns
        .iter()
        .map(|column| match (table, column.as_str()) {
            ("conversations", "id") | (_, "conversation_id") => format!("t.{column} + k.i"),
            ("turns", "id") | (_, "turn_id") => format!("t.{column} + k.i"),
            (_, "created_at_ms" | "updated_at_ms" | "ended_at_ms") => older(column),
            ("events", "wire") => {
                let mut wire = "t.wire".to_string();
                for (name, id) in [("conversation_id", conversation), ("turn_id", turn)] {
                    for end in [",", "}"] {
                        wire = format!(
                            "replace({wire}, '\"{name}\":{id}{end}', '\"{name}\":' || ({id} + k.i) || '{end}')"
                        );
                    }
                }
                wire
            }
            _ => format!("t.{column}"),
        })
        .collect();
    Ok(format!(
        "WITH RECURSIVE k(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM k WHERE i < ?2) \
         INSERT INTO {table} ({}) SELECT {} FROM k CROSS JOIN {table} t WHERE t.{key} = {conversation} AND ?3 > 0",
        columns.join(", "),
        expressions.join(", ")
    ))
}

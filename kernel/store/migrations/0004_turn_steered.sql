-- superpi store, version 4: a turn row may end `steered`: its prompt (`session.submit` with
-- `steer`) joined the turn that was running, whose end answers it. SQLite cannot change a
-- CHECK in place, so the table is made anew with the same rows and ids.

CREATE TABLE turns_steerable (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    status          TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'error', 'cancelled', 'interrupted', 'steered')),
    error           TEXT,
    created_at_ms   INTEGER NOT NULL,
    ended_at_ms     INTEGER,
    prompt          TEXT
);
INSERT INTO turns_steerable (id, conversation_id, status, error, created_at_ms, ended_at_ms, prompt)
    SELECT id, conversation_id, status, error, created_at_ms, ended_at_ms, prompt FROM turns;
DROP TABLE turns;
ALTER TABLE turns_steerable RENAME TO turns;
CREATE INDEX turns_status ON turns(status);

-- superpi store, version 10: schedules and webhook triggers. A schedule starts turns in a
-- conversation with nobody present: on the ticks of a cron expression in a time zone, or when
-- its webhook trigger is called. Each run is a row; a cron tick is claimed by moving
-- `next_at_ms` on in the transaction that records its run, so a tick runs once whichever
-- kernel claims it, and one missed while no kernel ran runs once when one starts.

CREATE TABLE schedules (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    owner           TEXT    NOT NULL,
    -- The conversation its runs are turns of.
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    name            TEXT    NOT NULL DEFAULT '',
    prompt          TEXT    NOT NULL,
    -- A cron schedule: the expression and its IANA time zone.
    cron            TEXT,
    timezone        TEXT    NOT NULL DEFAULT 'UTC',
    -- A webhook trigger: the SHA-256 of its URL token, and the secret a delivery proves.
    token_hash      TEXT    UNIQUE,
    secret          TEXT,
    -- The highest mode its turns run in (its creator's ceiling).
    ceiling         TEXT    NOT NULL,
    -- The next tick not yet claimed (NULL: none, or a trigger).
    next_at_ms      INTEGER,
    -- The conversation whose turn created it through a tool (NULL: a frontend's request).
    created_by      INTEGER,
    created_at_ms   INTEGER NOT NULL
);
CREATE INDEX schedules_due ON schedules(next_at_ms) WHERE next_at_ms IS NOT NULL;
CREATE INDEX schedules_owner ON schedules(owner, id);

-- One row per run: a claimed tick (`due_at_ms`) or a trigger's delivery (NULL), the turn it
-- submitted, or why none was.
CREATE TABLE schedule_runs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule_id     INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
    due_at_ms       INTEGER,
    started_at_ms   INTEGER NOT NULL,
    turn_id         INTEGER,
    error           TEXT
);
CREATE UNIQUE INDEX schedule_runs_tick ON schedule_runs(schedule_id, due_at_ms);
CREATE INDEX schedule_runs_turn ON schedule_runs(turn_id);

-- superpi store, version 1. Migrations are append-only: never edit a released file.

CREATE TABLE conversations (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    owner         TEXT    NOT NULL,
    harness       TEXT    NOT NULL,
    model         TEXT    NOT NULL,
    mode          TEXT    NOT NULL,
    workspace     TEXT,
    title         TEXT,
    parent_id     INTEGER REFERENCES conversations(id),
    fork_seq      INTEGER,
    settings      TEXT    NOT NULL DEFAULT '{}',
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE INDEX conversations_owner ON conversations(owner, updated_at_ms);

-- What the model sees: completed messages and tool results, in seq order.
CREATE TABLE entries (
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    seq             INTEGER NOT NULL,
    kind            TEXT    NOT NULL,
    turn_id         INTEGER,
    message         TEXT    NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;

-- What watchers see on catch-up: every event but the streaming deltas, as its wire JSON.
CREATE TABLE events (
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    seq             INTEGER NOT NULL,
    type            TEXT    NOT NULL,
    wire            TEXT    NOT NULL,
    PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;

CREATE TABLE turns (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    status          TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'error', 'cancelled', 'interrupted')),
    error           TEXT,
    created_at_ms   INTEGER NOT NULL,
    ended_at_ms     INTEGER
);
CREATE INDEX turns_status ON turns(status);

-- A frontend's own session key, per principal, mapped to a conversation.
CREATE TABLE frontend_sessions (
    frontend        TEXT    NOT NULL,
    principal       TEXT    NOT NULL,
    external_id     TEXT    NOT NULL,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    created_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (frontend, principal, external_id)
) WITHOUT ROWID;

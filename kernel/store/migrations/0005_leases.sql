-- superpi store, version 5: per-conversation leases and forwarded submits, so several kernels
-- can share one database (on SQLite one kernel holds the file; the tables are the same).
-- A lease names the kernel that runs a conversation until `expires_at_ms`; its generation
-- grows at every claim and fences a former holder's commits. A release keeps the row (owner
-- '' and expired) so generations never repeat.

CREATE TABLE conversation_leases (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id),
    owner           TEXT    NOT NULL,
    generation      INTEGER NOT NULL,
    expires_at_ms   INTEGER NOT NULL
);
CREATE INDEX conversation_leases_owner ON conversation_leases(owner);

-- A prompt submitted through a kernel that does not run its conversation: its turn row
-- (status queued, with the prompt) is written with it; the lease holder takes it from here.
CREATE TABLE queued_submits (
    turn_id         INTEGER PRIMARY KEY REFERENCES turns(id),
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    ceiling         TEXT    NOT NULL,
    steer           INTEGER NOT NULL
);
CREATE INDEX queued_submits_conversation ON queued_submits(conversation_id);

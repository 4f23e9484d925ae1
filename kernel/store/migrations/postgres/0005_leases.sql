-- superpi store, version 5, PostgreSQL dialect (as ../0005_leases.sql): per-conversation
-- leases and forwarded submits, so several kernels can share one database. Times are the
-- server's clock (milliseconds since the epoch), so kernels' clocks need not agree.

CREATE TABLE conversation_leases (
    conversation_id BIGINT PRIMARY KEY REFERENCES conversations(id),
    owner           TEXT   NOT NULL,
    generation      BIGINT NOT NULL,
    expires_at_ms   BIGINT NOT NULL
);
CREATE INDEX conversation_leases_owner ON conversation_leases(owner);

CREATE TABLE queued_submits (
    turn_id         BIGINT  PRIMARY KEY REFERENCES turns(id),
    conversation_id BIGINT  NOT NULL REFERENCES conversations(id),
    ceiling         TEXT    NOT NULL,
    steer           BOOLEAN NOT NULL
);
CREATE INDEX queued_submits_conversation ON queued_submits(conversation_id);

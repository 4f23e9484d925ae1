-- superpi store, version 8, PostgreSQL dialect (as ../0008_cluster_relay.sql): every watcher
-- another kernel has of a conversation (its holder then sends the deltas through the database),
-- and compactions and clears waiting for the kernel that runs their conversation, with their
-- answers.

ALTER TABLE remote_watchers ADD COLUMN watching BIGINT NOT NULL DEFAULT 0;

CREATE TABLE forwarded_jobs (
    id              BIGSERIAL PRIMARY KEY,
    conversation_id BIGINT  NOT NULL REFERENCES conversations(id),
    kind            TEXT    NOT NULL,
    taken           BOOLEAN NOT NULL DEFAULT FALSE,
    answer          TEXT,
    created_at_ms   BIGINT  NOT NULL
);
CREATE INDEX forwarded_jobs_conversation ON forwarded_jobs(conversation_id);

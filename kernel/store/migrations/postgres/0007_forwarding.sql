-- superpi store, version 7, PostgreSQL dialect (as ../0007_forwarding.sql): questions the
-- lease holder asks, answerable through any kernel, and the interactive and file-reading
-- watchers other kernels have of a conversation. Times are the server's clock.

CREATE TABLE open_questions (
    request_id       TEXT    PRIMARY KEY,
    conversation_id  BIGINT  NOT NULL REFERENCES conversations(id),
    owner            TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    remote_may_allow BOOLEAN NOT NULL,
    answer           TEXT
);
CREATE INDEX open_questions_conversation ON open_questions(conversation_id);

CREATE TABLE remote_watchers (
    conversation_id BIGINT NOT NULL REFERENCES conversations(id),
    kernel          TEXT   NOT NULL,
    interactive     BIGINT NOT NULL,
    readers         BIGINT NOT NULL,
    expires_at_ms   BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, kernel)
);

-- Artifacts, PostgreSQL dialect (as ../0016_artifacts.sql): files a turn's `artifact` tool
-- wrote for the person, with their bytes, so every kernel on the database serves them.
CREATE TABLE artifacts (
    conversation_id BIGINT NOT NULL REFERENCES conversations(id),
    name            TEXT   NOT NULL,
    media_type      TEXT   NOT NULL,
    size            BIGINT NOT NULL,
    bytes           BYTEA  NOT NULL,
    created_at_ms   BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, name)
);

-- Artifacts: files a turn's `artifact` tool wrote for the person, with their bytes, so every
-- kernel on the database lists and serves them (they were files in the data dir of the
-- kernel that ran the turn). Bounded by the kernel: 8 MiB each, 200 a conversation.
CREATE TABLE artifacts (
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    name            TEXT    NOT NULL,
    media_type      TEXT    NOT NULL,
    size            INTEGER NOT NULL,
    bytes           BLOB    NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, name)
);

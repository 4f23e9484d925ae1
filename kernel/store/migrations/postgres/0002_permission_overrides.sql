-- superpi store, version 2, PostgreSQL dialect (as ../0002_permission_overrides.sql): the
-- "always" answers of a conversation's permission questions, the JSON of superpi-policy's
-- `Overrides`.

CREATE TABLE permission_overrides (
    conversation_id BIGINT PRIMARY KEY REFERENCES conversations(id),
    overrides       TEXT   NOT NULL
);

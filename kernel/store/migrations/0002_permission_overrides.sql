-- superpi store, version 2: the "always" answers of a conversation's permission questions
-- (allow_always / reject_always), which last as long as the conversation, across kernels.
-- The JSON of superpi-policy's `Overrides`. Never written to a settings file.

CREATE TABLE permission_overrides (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id),
    overrides       TEXT    NOT NULL
) WITHOUT ROWID;

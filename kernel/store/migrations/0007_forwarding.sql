-- superpi store, version 7: what a kernel that does not run a conversation passes to the one
-- that does, so a frontend attached to any kernel on a shared database can answer questions.
-- On SQLite one kernel holds the file and these tables stay empty; they are the same on both
-- engines so one store suite runs on both.
--
-- A question the lease holder asks (a permission question, a `ui_request`) is recorded here
-- until it closes; another kernel writes a person's answer into its row and tells the holder.
-- A kernel whose frontends watch a conversation it does not run, interactively (they answer
-- permission questions) or reading files (editors with unsaved buffers), says how many here,
-- renewed like a lease, so the holder asks them as it asks its own watchers.

CREATE TABLE open_questions (
    request_id       TEXT    PRIMARY KEY,
    conversation_id  INTEGER NOT NULL REFERENCES conversations(id),
    owner            TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    remote_may_allow INTEGER NOT NULL,
    answer           TEXT
);
CREATE INDEX open_questions_conversation ON open_questions(conversation_id);

CREATE TABLE remote_watchers (
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    kernel          TEXT    NOT NULL,
    interactive     INTEGER NOT NULL,
    readers         INTEGER NOT NULL,
    expires_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, kernel)
);

-- superpi store, version 8: what else passes between kernels sharing a database. On SQLite one
-- kernel holds the file and this stays empty; it is the same on both engines so one store suite
-- runs on both.
--
-- `remote_watchers.watching` counts every watcher a kernel has of a conversation it does not
-- run (not only those that answer questions or read files): while there are any, the kernel that
-- runs it sends its deltas through the database.
--
-- A compaction or a clear asked through a kernel that does not run the conversation waits in
-- `forwarded_jobs` for the one that does, which takes it (`taken`), runs it between turns and
-- writes its answer (JSON: the method's result, or an error) for the asking kernel to read.

ALTER TABLE remote_watchers ADD COLUMN watching INTEGER NOT NULL DEFAULT 0;

CREATE TABLE forwarded_jobs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    kind            TEXT    NOT NULL,
    taken           INTEGER NOT NULL DEFAULT 0,
    answer          TEXT,
    created_at_ms   INTEGER NOT NULL
);
CREATE INDEX forwarded_jobs_conversation ON forwarded_jobs(conversation_id);

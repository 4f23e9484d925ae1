-- superpi store, version 9: durable memory. Notes outlive the conversation that wrote them:
-- they belong to an owner (a principal) and, when written for one, to a workspace; notes are
-- never edited (a correction is a new note that supersedes the old through a link).
-- Full-text search through an FTS5 index kept by triggers (porter stemming, as PostgreSQL's
-- `english` configuration stems).

CREATE TABLE memories (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    owner           TEXT    NOT NULL,
    workspace       TEXT,
    title           TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    tags            TEXT    NOT NULL DEFAULT '',
    source          TEXT,
    conversation_id INTEGER REFERENCES conversations(id),
    created_at_ms   INTEGER NOT NULL
);
CREATE INDEX memories_owner ON memories(owner, created_at_ms);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    title, body, tags, content = 'memories', content_rowid = 'id', tokenize = 'porter unicode61'
);
CREATE TRIGGER memories_indexed AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, title, body, tags) VALUES (new.id, new.title, new.body, new.tags);
END;
CREATE TRIGGER memories_unindexed AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, title, body, tags)
    VALUES ('delete', old.id, old.title, old.body, old.tags);
END;

-- How notes relate: `supersedes` (the newer note replaces the older), `supports`,
-- `contradicts`, `related`.
CREATE TABLE memory_links (
    from_id       INTEGER NOT NULL REFERENCES memories(id),
    to_id         INTEGER NOT NULL REFERENCES memories(id),
    relation      TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (from_id, to_id, relation)
) WITHOUT ROWID;
CREATE INDEX memory_links_to ON memory_links(to_id);

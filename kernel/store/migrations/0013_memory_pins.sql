-- superpi store, version 13: pinned notes. A pinned note ranks first in every search and is
-- always listed, with its text, in the index of notes a model reads. A note without a
-- workspace is a global one: it holds in every workspace of its owner (as before).

ALTER TABLE memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
CREATE INDEX memories_pinned ON memories(owner) WHERE pinned;

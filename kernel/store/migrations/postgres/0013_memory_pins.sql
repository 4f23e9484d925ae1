-- superpi store, version 13, PostgreSQL dialect (as ../0013_memory_pins.sql): pinned notes,
-- first in every search and always in the index of notes.

ALTER TABLE memories ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX memories_pinned ON memories(owner) WHERE pinned;

-- A store of a million conversations. Deleting one reads the rows that refer to it, and
-- SQLite checks every foreign key on the deleted rows: without these, each delete read the
-- turns, the conversations (their parent_id), the frontend sessions and the notes whole.
CREATE INDEX turns_conversation ON turns(conversation_id);
CREATE INDEX conversations_parent ON conversations(parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX frontend_sessions_conversation ON frontend_sessions(conversation_id);
CREATE INDEX memories_conversation ON memories(conversation_id) WHERE conversation_id IS NOT NULL;
CREATE INDEX schedules_conversation ON schedules(conversation_id);

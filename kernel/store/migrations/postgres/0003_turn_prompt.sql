-- superpi store, version 3, PostgreSQL dialect (as ../0003_turn_prompt.sql): a turn keeps its
-- prompt from the moment `session.submit` is acknowledged.

ALTER TABLE turns ADD COLUMN prompt TEXT;

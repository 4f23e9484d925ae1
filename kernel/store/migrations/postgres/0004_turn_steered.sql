-- superpi store, version 4, PostgreSQL dialect (as ../0004_turn_steered.sql): a turn row may
-- end `steered`. PostgreSQL changes the CHECK in place.

ALTER TABLE turns DROP CONSTRAINT turns_status_check;
ALTER TABLE turns ADD CONSTRAINT turns_status_check
    CHECK (status IN ('queued', 'running', 'completed', 'error', 'cancelled', 'interrupted', 'steered'));

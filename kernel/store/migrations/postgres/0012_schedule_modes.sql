-- superpi store, version 12, PostgreSQL dialect (as ../0012_schedule_modes.sql): a schedule's
-- run mode, catch-up, pause after failed runs in a row, and a keyed delivery's run.

ALTER TABLE schedules ADD COLUMN mode TEXT NOT NULL DEFAULT 'append';
ALTER TABLE schedules ADD COLUMN catch_up BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE schedules ADD COLUMN max_failures BIGINT NOT NULL DEFAULT 3;
ALTER TABLE schedules ADD COLUMN paused_at_ms BIGINT;
ALTER TABLE schedules ADD COLUMN resumed_at_ms BIGINT;
ALTER TABLE trigger_deliveries ADD COLUMN run_id BIGINT;

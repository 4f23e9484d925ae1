-- superpi store, version 12: how a schedule runs (`mode`: its turns in the conversation, a
-- fork of it, or a fresh conversation of its settings), whether ticks missed while no kernel
-- ran still run (`catch_up`), and its pause after `max_failures` failed runs in a row (until
-- `schedule.resume`, which counts failures afresh from `resumed_at_ms`). A trigger's delivery
-- keyed by an `Idempotency-Key` remembers its run, so the key sent again answers that run.

ALTER TABLE schedules ADD COLUMN mode TEXT NOT NULL DEFAULT 'append';
ALTER TABLE schedules ADD COLUMN catch_up INTEGER NOT NULL DEFAULT 1;
ALTER TABLE schedules ADD COLUMN max_failures INTEGER NOT NULL DEFAULT 3;
ALTER TABLE schedules ADD COLUMN paused_at_ms INTEGER;
ALTER TABLE schedules ADD COLUMN resumed_at_ms INTEGER;
ALTER TABLE trigger_deliveries ADD COLUMN run_id INTEGER;

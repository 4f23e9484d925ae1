-- superpi store, version 11, PostgreSQL dialect (as ../0011_trigger_deliveries.sql): the
-- deliveries a webhook trigger accepted, kept a day, so a delivery sent again starts no run.

CREATE TABLE trigger_deliveries (
    schedule_id     BIGINT NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
    delivery        TEXT   NOT NULL,
    seen_at_ms      BIGINT NOT NULL,
    PRIMARY KEY (schedule_id, delivery)
);
CREATE INDEX trigger_deliveries_seen ON trigger_deliveries(seen_at_ms);

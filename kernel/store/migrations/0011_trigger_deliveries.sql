-- superpi store, version 11: the deliveries a webhook trigger accepted, by the sender's
-- delivery id (or, without one, the delivery's signature), kept a day so that a delivery sent
-- again (a replay, or a sender's retry) starts no second run, whichever kernel it reaches.

CREATE TABLE trigger_deliveries (
    schedule_id     INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
    delivery        TEXT    NOT NULL,
    seen_at_ms      INTEGER NOT NULL,
    PRIMARY KEY (schedule_id, delivery)
);
CREATE INDEX trigger_deliveries_seen ON trigger_deliveries(seen_at_ms);

-- What each owner's conversations spent in a UTC day (days since the epoch), in US dollars,
-- for the per-day budget: kept here so that a restarted kernel, and every kernel on a shared
-- database, counts the same day.
CREATE TABLE daily_spend (
    owner TEXT NOT NULL,
    day BIGINT NOT NULL,
    usd DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (owner, day)
);

-- superpi store, version 6, PostgreSQL dialect (as ../0006_images.sql): the images of
-- prompts, each stored once under its SHA-256 (hex).

CREATE TABLE images (
    sha256        TEXT    PRIMARY KEY,
    media_type    TEXT    NOT NULL,
    bytes         BYTEA   NOT NULL,
    created_at_ms BIGINT  NOT NULL
);

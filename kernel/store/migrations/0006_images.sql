-- superpi store, version 6: the images of prompts, each stored once under its SHA-256 (hex).
-- Entries and events name an image by its digest and never hold its bytes, so replays stay
-- small; every model request reads the bytes back from here, whichever kernel runs it.

CREATE TABLE images (
    sha256        TEXT    PRIMARY KEY,
    media_type    TEXT    NOT NULL,
    bytes         BLOB    NOT NULL,
    created_at_ms INTEGER NOT NULL
);

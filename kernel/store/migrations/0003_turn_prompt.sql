-- superpi store, version 3: a turn keeps its prompt from the moment `session.submit` is
-- acknowledged (the JSON of the user `Message`), so a kernel killed before the turn starts
-- loses nothing it acknowledged: recovery stores the prompt in the conversation's history.

ALTER TABLE turns ADD COLUMN prompt TEXT;

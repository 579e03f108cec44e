-- gaffer store, version 11. Append-only: a later change is a new file.
-- Issue 34: each attempt's place in the attempt machine (domain/attempt-machine.ts: its state, kind,
-- ending and the facts it learned), written on every move, so recovery reads where an attempt stood
-- instead of guessing from its row's status.
ALTER TABLE attempts ADD COLUMN machine_json TEXT;

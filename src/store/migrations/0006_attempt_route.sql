-- gaffer store, version 6. Append-only: a later change is a new file.
-- The roster entry and provider an attempt's route came from (spec 05): an attempt record names the
-- entry that ran it; null when the task named its runner.
ALTER TABLE attempts ADD COLUMN entry TEXT;
ALTER TABLE attempts ADD COLUMN provider TEXT;

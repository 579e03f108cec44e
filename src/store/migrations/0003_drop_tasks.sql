-- gaffer store, version 3. Append-only: a later change is a new file.
-- The tasks table was written at admission and never read: a job's tasks are its spec's
-- (`jobs.spec_json`), normalized once and never changed, and every per-task fact that does change
-- (runner, model, status, outcome) is an attempt's row. Two copies of one list would let them
-- disagree, so the table goes; a task aggregate returns with its own state when there is any (issue 12).
DROP TABLE tasks;

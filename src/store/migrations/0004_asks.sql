-- gaffer store, version 4. Append-only: a later change is a new file.
-- The approval asks of a job (spec 05 "the yes-gate"): one row per task that needs a yes, opened
-- before the job takes its workspace, answered per task by a person (CLI, HTTP, MCP) or by the
-- timeout (no).
CREATE TABLE asks (
  job_id      TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  task        TEXT NOT NULL,
  ord         INTEGER NOT NULL,              -- the task's place in the request
  ask_json    TEXT NOT NULL,                 -- the decision-grade ask, without its answer
  answer      INTEGER,                       -- null while open; 1 yes, 0 no
  note        TEXT,
  answered_by TEXT,                          -- null: a person; `timeout`
  opened      REAL NOT NULL,
  answered    REAL,
  PRIMARY KEY (job_id, task)
);
CREATE INDEX asks_open ON asks (answer) WHERE answer IS NULL;

-- gaffer store, version 5. Append-only: a later change is a new file.
-- The outcome log (spec 05 "The outcome log and acceptance rate"): one row per task per job,
-- written when the job settles, beside the line in `<data dir>/outcomes.jsonl`. No reference to
-- `jobs`: the retention prune deletes old jobs, and the acceptance rate is read from every outcome
-- ever logged. `owner` is the job's, so a scoped caller sees the acceptance of its own jobs only.
CREATE TABLE outcomes (
  job_id       TEXT NOT NULL,
  task         TEXT NOT NULL,                -- the task's name in the job
  owner        TEXT,                         -- the job's owner; null for the local user
  ts           REAL NOT NULL,                -- epoch s, when the job settled
  type         TEXT NOT NULL,
  runner       TEXT NOT NULL,                -- the last attempt's: what actually ran
  model        TEXT,                         -- null when nothing named or reported one
  provider     TEXT,
  entry        TEXT,                         -- the roster entry; null when the task named its runner
  status       TEXT NOT NULL,                -- domain/outcome.ts OUTCOME_STATUSES
  gates_passed INTEGER NOT NULL,             -- 1 exactly when status = 'passed'
  escalated_to TEXT,
  returned     INTEGER NOT NULL DEFAULT 0,
  attempts     INTEGER NOT NULL,
  cost_usd     REAL,                         -- null: some api attempt's cost is unknown
  PRIMARY KEY (job_id, task)
);
CREATE INDEX outcomes_owner ON outcomes (owner);

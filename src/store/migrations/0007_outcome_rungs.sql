-- gaffer store, version 7. Append-only: a later change is a new file.
-- spec 05 "Escalation": a task that climbs its cost ladder has one outcome per rung — each rung's
-- model is judged on its own attempt (acceptance 0/1 for the rung that failed), not only the last.
-- `rung` numbers them from 1; the key gains it. SQLite cannot change a key in place: the table is
-- rebuilt, every row kept as rung 1.
CREATE TABLE outcomes_rungs (
  job_id       TEXT NOT NULL,
  task         TEXT NOT NULL,
  rung         INTEGER NOT NULL DEFAULT 1,   -- 1 for the rung the task started on, 2 after one climb, …
  owner        TEXT,
  ts           REAL NOT NULL,
  type         TEXT NOT NULL,
  runner       TEXT NOT NULL,                -- the rung's last attempt: what actually ran
  model        TEXT,
  provider     TEXT,
  entry        TEXT,
  status       TEXT NOT NULL,                -- domain/outcome.ts OUTCOME_STATUSES
  gates_passed INTEGER NOT NULL,
  escalated_to TEXT,                         -- the entry of the rung above, when the task climbed from this one
  returned     INTEGER NOT NULL DEFAULT 0,
  attempts     INTEGER NOT NULL,             -- this rung's attempts, its fix rounds included
  cost_usd     REAL,
  PRIMARY KEY (job_id, task, rung)
);
INSERT INTO outcomes_rungs (job_id, task, rung, owner, ts, type, runner, model, provider, entry, status, gates_passed, escalated_to, returned, attempts, cost_usd)
  SELECT job_id, task, 1, owner, ts, type, runner, model, provider, entry, status, gates_passed, escalated_to, returned, attempts, cost_usd FROM outcomes;
DROP TABLE outcomes;
ALTER TABLE outcomes_rungs RENAME TO outcomes;
CREATE INDEX outcomes_owner ON outcomes (owner);
CREATE INDEX outcomes_type_entry ON outcomes (type, entry);

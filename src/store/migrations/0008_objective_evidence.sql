-- gaffer store, version 8. Append-only: a later change is a new file.
-- spec 07 "Objectives ordering": when a job ends, each objective its tasks named (and its
-- workspace's objectives file declared, at the checkpoint) gets one evidence record. No reference to
-- `jobs`: as with the outcome log, an objective's evidence outlives the retention prune of its jobs.
CREATE TABLE objective_evidence (
  job_id        TEXT NOT NULL,
  objective     TEXT NOT NULL,                -- OBJ-<n>
  workspace     TEXT NOT NULL,                -- whose objectives file declared it
  owner         TEXT,                         -- the job's owner; null for the local user
  ts            REAL NOT NULL,                -- epoch s, when the job settled
  status        TEXT NOT NULL,                -- the job's final status
  files_changed TEXT NOT NULL,                -- JSON array of the job's changed paths
  confidence    REAL NOT NULL,                -- 0.6 when the job ended done, else 0.4
  PRIMARY KEY (job_id, objective)
);
CREATE INDEX objective_evidence_objective ON objective_evidence (workspace, objective, ts);

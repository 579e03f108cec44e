-- gaffer store, version 2. Append-only: a later change is a new file.
-- Every process group gaffer starts for a job besides its workers (they are in `attempts`): the
-- verification, the baseline and original-tests runs, flaky reruns, criteria commands. A row lives
-- while its group runs, so a restart (or the next holder of the workspace) can stop what a dead
-- gaffer left behind (spec 07 "Store and restart").
CREATE TABLE job_processes (
  job_id   TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  pgid     INTEGER NOT NULL,
  pg_start REAL NOT NULL,                 -- the leader's start time (epoch s), against pid reuse
  what     TEXT NOT NULL,                 -- which run: its log's name (verification-0, baseline-0, …)
  PRIMARY KEY (job_id, pgid)
);

-- gaffer store, version 1. Append-only: a later change is a new file.
CREATE TABLE jobs (
  id              TEXT PRIMARY KEY,
  owner           TEXT,
  title           TEXT NOT NULL,
  workspace       TEXT NOT NULL,
  status          TEXT NOT NULL,
  phase           TEXT,
  verdict         TEXT,
  error           TEXT,
  created         REAL NOT NULL,
  started         REAL,
  finished        REAL,
  spec_json       TEXT NOT NULL,          -- the normalized request (JobSpec)
  result_json     TEXT,                   -- evidence, verification, proof … as far as known
  checkpoint_json TEXT,                   -- the pre-work Snapshot
  pid             INTEGER,                -- the process running the job while it is live
  pid_start       REAL,                   -- that process's start time (epoch s), against pid reuse
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  idem_key        TEXT,
  request_hash    TEXT,
  seq             INTEGER NOT NULL DEFAULT 0  -- last event sequence number
);
CREATE INDEX jobs_created ON jobs(created DESC);
CREATE INDEX jobs_status ON jobs(status);
CREATE UNIQUE INDEX jobs_idem ON jobs(coalesce(owner, ''), idem_key) WHERE idem_key IS NOT NULL;

CREATE TABLE tasks (
  job_id      TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  idx         INTEGER NOT NULL,
  name        TEXT NOT NULL,
  type        TEXT NOT NULL,
  runner      TEXT NOT NULL,
  model       TEXT,
  instruction TEXT NOT NULL,
  spec_json   TEXT NOT NULL,
  PRIMARY KEY (job_id, idx)
);

-- Every worker is an attempt of its task (spec 06 "Attempts ledger").
CREATE TABLE attempts (
  job_id      TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  worker      TEXT NOT NULL,              -- worker name: task name, or fixer-N
  task        TEXT NOT NULL,              -- the task it works on
  attempt     INTEGER NOT NULL,
  role        TEXT NOT NULL,
  runner      TEXT NOT NULL,
  model       TEXT,
  status      TEXT NOT NULL,
  outcome     TEXT,
  queued_at   REAL NOT NULL,
  started     REAL,
  finished    REAL,
  pgid        INTEGER,
  pg_start    REAL,
  last_event  TEXT,
  state_json  TEXT,                       -- the detected state, when any
  report_json TEXT,                       -- the worker's full report once it ended
  log_file    TEXT,
  ord         INTEGER NOT NULL,
  PRIMARY KEY (job_id, worker)
);

CREATE TABLE events (
  job_id  TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  seq     INTEGER NOT NULL,
  ts      REAL NOT NULL,
  name    TEXT NOT NULL,
  event   TEXT NOT NULL,
  message TEXT NOT NULL,
  data_json TEXT,
  PRIMARY KEY (job_id, seq)
);

-- One job per workspace across processes (spec 06): the holder's pid and start time.
CREATE TABLE workspace_locks (
  workspace TEXT PRIMARY KEY,
  job_id    TEXT NOT NULL,
  pid       INTEGER NOT NULL,
  pid_start REAL NOT NULL,
  acquired  REAL NOT NULL
);

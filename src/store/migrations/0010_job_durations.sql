-- gaffer store, version 10. Append-only: a later change is a new file.
-- spec 07 "Adaptive ceiling": a live job's ceiling is raised to what the last jobs in its workspace
-- really took (`finished - started`). Read on every new job and its start, so it is one range of
-- this index, newest first, never a scan of `jobs` (which holds every workspace's jobs until the
-- retention prune). `started` and `status` ride along so the read never opens a row.
-- IF NOT EXISTS: a data dir migrated before 0008/0009 landed may have run this file as an earlier version.
CREATE INDEX IF NOT EXISTS jobs_workspace_finished ON jobs (workspace, finished, started, status);

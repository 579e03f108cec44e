-- gaffer store, version 9. Append-only: a later change is a new file.
-- issue 15 (spec 07 "Budgets"): each attempt's spend in the unit its billing pays in, null when
-- unknown (never 0), so a budget sums a window's spend in one indexed read; `route_why` says why an
-- attempt moved to its provider's fallback entry.
ALTER TABLE attempts ADD COLUMN billing TEXT;
ALTER TABLE attempts ADD COLUMN spend_usd REAL;
ALTER TABLE attempts ADD COLUMN spend_requests INTEGER;
ALTER TABLE attempts ADD COLUMN spend_tokens INTEGER;
ALTER TABLE attempts ADD COLUMN spend_seconds REAL;
ALTER TABLE attempts ADD COLUMN route_why TEXT;
CREATE INDEX attempts_finished ON attempts (finished) WHERE finished IS NOT NULL;
-- A provider that said it is rate-limited or out of quota: every attempt for it waits until `until`
-- (epoch s), shared by every gaffer process on the data dir.
CREATE TABLE provider_suspensions (
  provider TEXT PRIMARY KEY,
  until    REAL NOT NULL,
  why      TEXT NOT NULL,
  since    REAL NOT NULL
);

-- The headline figure of each run, so a history of 100 000 runs is listed without parsing a
-- single report; filled for earlier runs by the migration's backfill step.
ALTER TABLE runs ADD COLUMN headline_key   TEXT;
ALTER TABLE runs ADD COLUMN headline       REAL;
ALTER TABLE runs ADD COLUMN headline_unit  TEXT;
CREATE INDEX runs_by_tag ON runs (tag, started_at_ms DESC);

-- Persistent settings (the retention policy): one row per name.
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

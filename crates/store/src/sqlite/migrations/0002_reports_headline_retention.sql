-- Reports move to a table of their own, so listing runs reads only the small listing rows
-- (a saved report is tens of kilobytes; scanning past them made a 100 000-run history slow).
CREATE TABLE reports (
    run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    report TEXT NOT NULL
);
INSERT INTO reports (run_id, report) SELECT id, report FROM runs;
ALTER TABLE runs DROP COLUMN report;

-- The headline figure of each run, shown by the history without parsing a report; filled for
-- earlier runs by the migration's backfill step.
ALTER TABLE runs ADD COLUMN headline_key  TEXT;
ALTER TABLE runs ADD COLUMN headline      REAL;
ALTER TABLE runs ADD COLUMN headline_unit TEXT;
CREATE INDEX runs_by_tag ON runs (tag, started_at_ms DESC);
-- The history's order, newest first and the later id first among equal times, read straight
-- off an index that also holds every listing column, so a listing never visits the table (the
-- old index left the tie-break to a sort of every row, and each row to a table lookup).
DROP INDEX runs_by_time;
CREATE INDEX runs_by_time ON runs (started_at_ms DESC, id DESC, kind, target, tag, headline_key, headline, headline_unit);

-- Persistent settings (the retention policy): one row per name.
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

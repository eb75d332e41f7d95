-- Every finished run: a few columns to filter and sort on, and the whole Report as JSON.
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL,
    target        TEXT    NOT NULL,
    started_at_ms INTEGER NOT NULL,
    version       TEXT    NOT NULL,
    tag           TEXT,
    report        TEXT    NOT NULL
);
CREATE INDEX runs_by_time ON runs (started_at_ms DESC);
CREATE INDEX runs_by_kind ON runs (kind, started_at_ms DESC);

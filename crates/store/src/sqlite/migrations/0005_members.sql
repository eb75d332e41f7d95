-- Runs made by several processes at once (`--members`). A member's saved run says which run
-- and index it was, so `wirespeed merge --run-id` finds its reports.
ALTER TABLE runs ADD COLUMN member_run   TEXT;
ALTER TABLE runs ADD COLUMN member_index INTEGER;
CREATE INDEX runs_by_member_run ON runs (member_run, member_index);
-- The barrier members meet at (used on PostgreSQL; the same tables here, so a version means
-- the same schema on both): one row per run, one per member that arrived.
CREATE TABLE member_runs (
    run_id      TEXT    PRIMARY KEY,
    members     INTEGER NOT NULL,
    spec        TEXT    NOT NULL,
    created_ms  INTEGER NOT NULL,
    start_at_ns INTEGER,
    status      TEXT    NOT NULL,
    reason      TEXT
);
CREATE TABLE member_arrivals (
    run_id         TEXT    NOT NULL REFERENCES member_runs (run_id) ON DELETE CASCADE,
    member_index   INTEGER NOT NULL,
    host           TEXT    NOT NULL,
    arrived_ns     INTEGER NOT NULL,
    finished_ns    INTEGER,
    status         TEXT    NOT NULL,
    reason         TEXT,
    offset_ns      INTEGER,
    offset_rtt_ns  INTEGER,
    saved_run      INTEGER,
    PRIMARY KEY (run_id, member_index)
);

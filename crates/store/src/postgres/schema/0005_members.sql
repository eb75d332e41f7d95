-- Runs made by several processes at once (`--members`). A member's saved run says which run
-- and index it was, so `wirespeed merge --run-id` finds its reports.
ALTER TABLE wirespeed.runs ADD COLUMN member_run   TEXT;
ALTER TABLE wirespeed.runs ADD COLUMN member_index INTEGER;
CREATE INDEX runs_by_member_run ON wirespeed.runs (member_run, member_index);
-- The barrier members meet at: one row per run (its members, spec, the start once the last
-- member arrived, and whether it was aborted), one per member that arrived.
CREATE TABLE wirespeed.member_runs (
    run_id      TEXT    PRIMARY KEY,
    members     INTEGER NOT NULL,
    spec        TEXT    NOT NULL,
    created_ms  BIGINT  NOT NULL,
    start_at_ns BIGINT,
    status      TEXT    NOT NULL,
    reason      TEXT
);
CREATE TABLE wirespeed.member_arrivals (
    run_id         TEXT    NOT NULL REFERENCES wirespeed.member_runs (run_id) ON DELETE CASCADE,
    member_index   INTEGER NOT NULL,
    host           TEXT    NOT NULL,
    arrived_ns     BIGINT  NOT NULL,
    finished_ns    BIGINT,
    status         TEXT    NOT NULL,
    reason         TEXT,
    offset_ns      BIGINT,
    offset_rtt_ns  BIGINT,
    saved_run      BIGINT,
    PRIMARY KEY (run_id, member_index)
);

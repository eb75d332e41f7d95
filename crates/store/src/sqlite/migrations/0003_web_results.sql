-- Browser speed tests (`wirespeed web`): one row per visitor's test. Only the visitor's network
-- is kept, never the full address; `network` is also what "one row per IP" replaces by.
CREATE TABLE web_results (
    id                   TEXT    PRIMARY KEY,
    created_ms           INTEGER NOT NULL,
    network              TEXT    NOT NULL,
    isp                  TEXT    NOT NULL,
    country              TEXT    NOT NULL,
    region               TEXT    NOT NULL,
    download_bps         REAL,
    upload_bps           REAL,
    ping_ms              REAL,
    jitter_ms            REAL,
    download_by_server   INTEGER NOT NULL,
    upload_by_server     INTEGER NOT NULL,
    claimed_download_bps REAL,
    claimed_upload_bps   REAL,
    user_agent           TEXT    NOT NULL,
    lang                 TEXT    NOT NULL,
    source               TEXT    NOT NULL
);
CREATE INDEX web_results_by_time ON web_results (created_ms DESC);
CREATE INDEX web_results_by_network ON web_results (network, created_ms DESC);

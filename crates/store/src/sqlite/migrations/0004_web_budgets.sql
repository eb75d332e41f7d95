-- Transfer budgets shared by every `wirespeed web` server on one database: a token bucket per
-- visitor (an IPv4 address or an IPv6 /64), refilled continuously, charged at each transfer.
CREATE TABLE web_budgets (
    client TEXT    PRIMARY KEY,
    tokens REAL    NOT NULL,
    at_ms  INTEGER NOT NULL
);
CREATE INDEX web_budgets_by_time ON web_budgets (at_ms);

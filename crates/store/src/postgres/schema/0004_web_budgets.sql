-- Transfer budgets shared by every `wirespeed web` server on one database: a token bucket per
-- visitor (an IPv4 address or an IPv6 /64), refilled continuously, charged at each transfer.
CREATE TABLE wirespeed.web_budgets (
    client TEXT             PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    at_ms  BIGINT           NOT NULL
);
CREATE INDEX web_budgets_by_time ON wirespeed.web_budgets (at_ms);

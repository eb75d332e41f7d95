-- Latency under load from wirespeed's own page: the median round trip while downloading and
-- while uploading (ms), and the grade of what the load added. Results saved before, and
-- LibreSpeed clients' results, have none.
ALTER TABLE wirespeed.web_results ADD COLUMN latency_down_ms DOUBLE PRECISION;
ALTER TABLE wirespeed.web_results ADD COLUMN latency_up_ms   DOUBLE PRECISION;
ALTER TABLE wirespeed.web_results ADD COLUMN latency_grade   TEXT;

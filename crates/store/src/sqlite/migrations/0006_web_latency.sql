-- Latency under load from wirespeed's own page: the median round trip while downloading and
-- while uploading (ms), and the grade of what the load added. Results saved before, and
-- LibreSpeed clients' results, have none.
ALTER TABLE web_results ADD COLUMN latency_down_ms REAL;
ALTER TABLE web_results ADD COLUMN latency_up_ms   REAL;
ALTER TABLE web_results ADD COLUMN latency_grade   TEXT;

-- The member run a merged report was made from (`wirespeed merge`), NULL for any other run.
-- A run is merged into one saved run: merging it again (more members saved since, or
-- --allow-partial) replaces the earlier merge instead of listing the run twice. Filled for
-- older merged runs from their reports.
ALTER TABLE runs ADD COLUMN merged_run TEXT;
UPDATE runs SET merged_run =
    (SELECT CASE WHEN json_valid(report) THEN json_extract(report, '$.meta.merged.run_id') END
       FROM reports WHERE reports.run_id = runs.id);
CREATE INDEX runs_merged_run ON runs (merged_run) WHERE merged_run IS NOT NULL;

-- The member run a merged report was made from, NULL for any other run, as in SQLite's 0008:
-- merging a run again replaces its earlier merge. Older merged runs are marked from their
-- reports.
ALTER TABLE wirespeed.runs ADD COLUMN merged_run TEXT;
UPDATE wirespeed.runs r SET merged_run = p.report -> 'meta' -> 'merged' ->> 'run_id'
  FROM wirespeed.reports p
 WHERE p.run_id = r.id AND p.report -> 'meta' -> 'merged' IS NOT NULL;
CREATE INDEX runs_merged_run ON wirespeed.runs (merged_run) WHERE merged_run IS NOT NULL;

-- How a run ended when it did not finish: 'interrupted' (the user stopped it) or 'aborted'
-- (its server lost, a stream failed); NULL for a run that finished, as in SQLite's 0007.
-- Older runs are marked from their reports' notes.
ALTER TABLE wirespeed.runs ADD COLUMN ended TEXT;
UPDATE wirespeed.runs r SET ended = CASE
    WHEN EXISTS (SELECT 1 FROM json_array_elements_text(p.report -> 'meta' -> 'notes') n
                 WHERE n LIKE 'interrupted:%') THEN 'interrupted'
    ELSE 'aborted' END
  FROM wirespeed.reports p
 WHERE p.run_id = r.id
   AND EXISTS (SELECT 1 FROM json_array_elements_text(p.report -> 'meta' -> 'notes') n
               WHERE n LIKE 'interrupted:%' OR n LIKE 'aborted:%');

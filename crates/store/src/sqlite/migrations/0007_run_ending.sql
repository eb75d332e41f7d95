-- How a run ended when it did not finish: 'interrupted' (the user stopped it) or 'aborted'
-- (its server lost, a stream failed); NULL for a run that finished. The history marks such
-- runs: a cut run read as a whole one. Filled for older runs from their reports' notes.
ALTER TABLE runs ADD COLUMN ended TEXT;

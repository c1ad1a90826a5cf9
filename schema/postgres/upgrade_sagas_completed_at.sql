-- Adds CompletedAt to a NimbusSagas made before completed instances were kept: rows from before
-- it are running instances (completed ones were deleted).
-- Parameters: none
ALTER TABLE {schema}."NimbusSagas"
ADD COLUMN IF NOT EXISTS "CompletedAt" timestamp NULL;

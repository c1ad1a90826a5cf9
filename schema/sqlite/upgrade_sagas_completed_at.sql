-- Adds CompletedAt to a NimbusSagas made before completed instances were kept: rows from before
-- it are running instances (completed ones were deleted). Run only when the column is missing
-- (SQLite has no ADD COLUMN IF NOT EXISTS; auto-create checks with
-- catalog_sagas_has_completed_at.sql first).
-- Parameters: none
ALTER TABLE "NimbusSagas" ADD COLUMN "CompletedAt" TEXT NULL;

-- Adds the Priority column to NimbusMessages (shared-table layout): higher is received first, 0
-- (the default, which every sender that does not name one writes) is normal. SQLite has no ADD
-- COLUMN IF NOT EXISTS: this runs only when the catalog shows it missing, in the transaction
-- that holds the file's write lock.
-- Parameters: none
ALTER TABLE "NimbusMessages" ADD COLUMN "Priority" INTEGER NOT NULL DEFAULT 0;

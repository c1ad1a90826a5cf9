-- Adds IdleSeconds to NimbusSubscriptions: the idle period (auto_delete_on_idle, in seconds) the
-- subscriber promised, so that publishers and sweepers judge each subscription by its own
-- subscriber's setting, not theirs. Rows from before it keep NULL and are judged by the reader's.
-- Run only when the column is missing (SQLite has no ADD COLUMN IF NOT EXISTS; auto-create checks
-- with catalog_has_idle_seconds.sql first).
-- Parameters: none
ALTER TABLE "NimbusSubscriptions" ADD COLUMN "IdleSeconds" INTEGER NULL;

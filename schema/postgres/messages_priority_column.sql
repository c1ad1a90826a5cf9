-- Adds the Priority column to NimbusMessages (shared-table layout) where it is missing: higher
-- is received first, 0 (the default, which every sender that does not name one writes) is
-- normal. Run only when the catalog shows it missing; PostgreSQL adds a column with a constant
-- default without rewriting the table.
-- Parameters: none
ALTER TABLE {schema}."NimbusMessages"
    ADD COLUMN IF NOT EXISTS "Priority" smallint NOT NULL DEFAULT 0;

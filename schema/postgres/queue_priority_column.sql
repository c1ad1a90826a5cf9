-- Adds the Priority column to a queue table where it is missing: higher is received first, 0
-- (the default, which every sender that does not name one writes, NServiceBus's included) is
-- normal. Run only when the catalog shows it missing, so a started queue never waits for the
-- table lock again; PostgreSQL adds a column with a constant default without rewriting the table.
-- Parameters: none
ALTER TABLE {table}
    ADD COLUMN IF NOT EXISTS "Priority" smallint NOT NULL DEFAULT 0;

-- Adds the columns of ordered groups to a queue table where they are missing: GroupKey (the
-- group a message belongs to, NULL for none), GroupPosition (the RowVersion of the row a retry
-- copy stands in for, NULL for a first send) and NotBefore (a delayed retry of a grouped message
-- waits in its place until then). Run only when the catalog shows GroupKey missing, so a
-- started queue never waits for the table lock again.
-- Parameters: none
ALTER TABLE {table}
    ADD COLUMN IF NOT EXISTS "GroupKey"      varchar(255) NULL,
    ADD COLUMN IF NOT EXISTS "GroupPosition" bigint       NULL,
    ADD COLUMN IF NOT EXISTS "NotBefore"     timestamp    NULL;

-- Adds the columns of ordered groups to NimbusMessages (shared-table layout) where they are
-- missing: GroupKey (the group a message belongs to, NULL for none) and GroupPlace (its place
-- in the group: microseconds since 1970 by the database's clock when it became visible, or the
-- place of the message a retry copy stands in for). Run only when the catalog shows GroupKey
-- missing; PostgreSQL adds nullable columns without rewriting the table.
-- Parameters: none
ALTER TABLE {schema}."NimbusMessages"
    ADD COLUMN IF NOT EXISTS "GroupKey"   varchar(255) NULL,
    ADD COLUMN IF NOT EXISTS "GroupPlace" bigint       NULL;

-- Adds the columns of ordered groups to a queue table: GroupKey (the group a message belongs
-- to, NULL for none), GroupPosition (the RowVersion of the row a retry copy stands in for, NULL
-- for a first send) and NotBefore (a delayed retry of a grouped message waits in its place until
-- then). SQLite has no ADD COLUMN IF NOT EXISTS: this runs only when the catalog shows GroupKey
-- missing, in the transaction that holds the file's write lock.
-- Parameters: none
ALTER TABLE {table} ADD COLUMN "GroupKey" TEXT NULL;
ALTER TABLE {table} ADD COLUMN "GroupPosition" INTEGER NULL;
ALTER TABLE {table} ADD COLUMN "NotBefore" TEXT NULL;

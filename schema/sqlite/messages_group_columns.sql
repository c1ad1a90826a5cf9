-- Adds the columns of ordered groups to NimbusMessages (shared-table layout): GroupKey (the
-- group a message belongs to, NULL for none) and GroupPlace (its place in the group:
-- microseconds since 1970 by the database's clock when it became visible, or the place of the
-- message a retry copy stands in for). SQLite has no ADD COLUMN IF NOT EXISTS: this runs only
-- when the catalog shows GroupKey missing, in the transaction that holds the file's write lock.
-- Parameters: none
ALTER TABLE "NimbusMessages" ADD COLUMN "GroupKey" TEXT NULL;
ALTER TABLE "NimbusMessages" ADD COLUMN "GroupPlace" INTEGER NULL;

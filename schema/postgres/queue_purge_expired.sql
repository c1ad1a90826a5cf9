-- Deletes at most a batch of expired rows (by database time) of a queue table, skipping locked ones.
-- Parameters: 1 batch size (bigint)
DELETE FROM {table}
WHERE "RowVersion" IN (
    SELECT "RowVersion" FROM {table}
    WHERE "Expires" < (now() AT TIME ZONE 'utc')
    LIMIT $1
    FOR UPDATE SKIP LOCKED)

-- Deletes at most a batch of expired rows (by database time) of a queue table, skipping locked
-- ones. NServiceBus's table has no Expires index (its transport only discards expired messages
-- when it receives them), so this reads the table; a DBA may add an index on Expires.
-- Parameters: 1 batch size (bigint)
DELETE FROM {table}
WHERE Id IN (
    SELECT Id FROM {table}
    WHERE Expires < (now() AT TIME ZONE 'utc')
    LIMIT $1
    FOR UPDATE SKIP LOCKED)

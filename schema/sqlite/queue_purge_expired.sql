-- Deletes at most a batch of expired rows (by database time) of a queue table.
-- Parameters: 1 batch size (integer)
DELETE FROM {table}
WHERE "RowVersion" IN (
    SELECT "RowVersion" FROM {table}
    WHERE "Expires" < strftime('%Y-%m-%d %H:%M:%f', 'now')
    LIMIT ?1)

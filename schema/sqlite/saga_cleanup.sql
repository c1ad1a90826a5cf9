-- Deletes at most a batch of saga instances that completed longer ago than the given time
-- (database time).
-- Parameters: 1 how long in seconds (integer), 2 batch size (integer)
DELETE FROM "NimbusSagas"
WHERE "Id" IN (
    SELECT "Id" FROM "NimbusSagas"
    WHERE "CompletedAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)

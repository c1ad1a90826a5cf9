-- Deletes at most a batch of saga instances that completed longer ago than the given time
-- (database time), skipping rows others hold.
-- Parameters: 1 how long in seconds (bigint), 2 batch size (bigint)
DELETE FROM {schema}."NimbusSagas"
WHERE "Id" IN (
    SELECT "Id" FROM {schema}."NimbusSagas"
    WHERE "CompletedAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)

-- Deletes at most a batch of bodies stored apart whose dead letter failed longer ago than the
-- retention period (database time), as the dead letters past it are, skipping rows others hold.
-- Parameters: 1 seconds (bigint), 2 batch size (bigint)
DELETE FROM {schema}."NimbusBodies"
WHERE "Id" IN (
    SELECT "Id" FROM {schema}."NimbusBodies"
    WHERE "DeadLetteredAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)

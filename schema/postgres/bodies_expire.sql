-- Deletes at most a batch of bodies stored apart whose message expired longer ago than the
-- given seconds (database time), skipping rows others hold: their messages are gone, or are discarded unread.
-- Parameters: 1 seconds (bigint), 2 batch size (bigint)
DELETE FROM {schema}."NimbusBodies"
WHERE "Id" IN (
    SELECT "Id" FROM {schema}."NimbusBodies"
    WHERE "Expires" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)

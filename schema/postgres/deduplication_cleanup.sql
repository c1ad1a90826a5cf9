-- Deletes at most a batch of keys whose window ended longer ago than the given seconds
-- (database time), skipping rows others hold.
-- Parameters: 1 seconds past the end of the window (bigint), 2 batch size (bigint)
DELETE FROM {schema}."NimbusDeduplication"
WHERE ctid IN (
    SELECT ctid FROM {schema}."NimbusDeduplication"
    WHERE "ExpiresAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)

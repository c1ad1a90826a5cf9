-- Deletes at most a batch of expired messages (by database time) of a destination, skipping locked rows.
-- Parameters: 1 Destination (varchar), 2 batch size (bigint)
DELETE FROM {schema}."NimbusMessages"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM {schema}."NimbusMessages"
    WHERE "Destination" = $1 AND "ExpiresAt" < (now() AT TIME ZONE 'utc')
    LIMIT $2
    FOR UPDATE SKIP LOCKED)

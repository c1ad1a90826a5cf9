-- Deletes at most a batch of dead letters that failed longer ago than the retention period
-- (database time), skipping rows others hold (a replay in flight).
-- Parameters: 1 the retention period in seconds (bigint), 2 batch size (bigint)
DELETE FROM {schema}."NimbusDeadLetters"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM {schema}."NimbusDeadLetters"
    WHERE "FailedAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)

-- Deletes at most a batch of monitoring reports written longer ago than the retention period
-- (database time).
-- Parameters: 1 the retention period in seconds (bigint), 2 batch size (bigint)
DELETE FROM {schema}."NimbusMonitoring"
WHERE ctid IN (
    SELECT ctid FROM {schema}."NimbusMonitoring"
    WHERE "ReportedAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2)

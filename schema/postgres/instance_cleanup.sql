-- Deletes the rows of buses not seen (stopped, or silent) for the given time, by database time.
-- Parameters: 1 how long in seconds (bigint)
DELETE FROM {schema}."NimbusInstances"
WHERE "LastSeenAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'

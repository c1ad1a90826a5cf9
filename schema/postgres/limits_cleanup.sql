-- Deletes at most a batch of limit rows untouched for longer than the given seconds (database
-- time), skipping rows others hold: the slots of keys no longer seen. A limit adds its slots
-- again when it next needs them.
-- Parameters: 1 seconds (bigint), 2 batch size (bigint)
DELETE FROM {schema}."NimbusLimits"
WHERE ctid IN (
    SELECT ctid FROM {schema}."NimbusLimits"
    WHERE "ReadyAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)

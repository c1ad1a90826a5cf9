-- How many of a limit's slots exist, and in how many ms the soonest one is ready again (0 or
-- less: ready, and held by another transaction), read without waiting for any lock.
-- Parameters: 1 Scope (varchar), 2 slots (bigint)
-- Returns: Slots (bigint), ReadyInMs (bigint, NULL when there is no slot)
SELECT COUNT(*),
    CAST(EXTRACT(EPOCH FROM (MIN("ReadyAt") - (statement_timestamp() AT TIME ZONE 'utc'))) * 1000
         AS bigint)
FROM {schema}."NimbusLimits"
WHERE "Scope" = $1 AND "Slot" >= 0 AND "Slot" < $2::bigint

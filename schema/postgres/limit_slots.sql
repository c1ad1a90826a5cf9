-- Adds the slots a limit lacks (0 to slots - 1, ready at once) and its row of held messages
-- (slot -1). Slots that exist are left alone without waiting for the transactions that hold
-- them (the NOT EXISTS reads them as committed); a slot another transaction is adding at the
-- same moment is waited for. The missing slots are found first (MATERIALIZED): Citus cannot
-- push an INSERT … SELECT that reads the table it writes down to a single-shard table.
-- Parameters: 1 Scope (varchar), 2 slots (bigint)
WITH missing AS MATERIALIZED (
    SELECT slot FROM generate_series(-1, $2::bigint - 1) AS slot
    WHERE NOT EXISTS (
        SELECT 1 FROM {schema}."NimbusLimits" AS have
        WHERE have."Scope" = $1::varchar AND have."Slot" = slot))
INSERT INTO {schema}."NimbusLimits" ("Scope", "Slot", "ReadyAt")
SELECT $1::varchar, missing.slot, (statement_timestamp() AT TIME ZONE 'utc') - interval '1 second'
FROM missing
ON CONFLICT ("Scope", "Slot") DO NOTHING

-- Adds the slots a limit lacks (0 to slots - 1, ready at once) and its row of held messages
-- (slot -1); a slot another transaction is adding is waited for.
-- Parameters: 1 Scope (varchar), 2 slots (bigint)
INSERT INTO {schema}."NimbusLimits" ("Scope", "Slot", "ReadyAt")
SELECT $1, slot, (clock_timestamp() AT TIME ZONE 'utc') - interval '1 second'
FROM generate_series(-1, $2::bigint - 1) AS slot
ON CONFLICT ("Scope", "Slot") DO NOTHING

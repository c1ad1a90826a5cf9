-- Pauses a schedule: no instance fires it until it is resumed. Affects no row when it is paused
-- already or does not exist.
-- Parameters: 1 Endpoint (varchar), 2 Name (varchar), 3 PausedBy (varchar: who paused it, for operators)
UPDATE {schema}."NimbusSchedules"
SET "PausedAt" = (now() AT TIME ZONE 'utc'), "PausedBy" = $3, "Version" = "Version" + 1
WHERE "Endpoint" = $1 AND "Name" = $2 AND "PausedAt" IS NULL

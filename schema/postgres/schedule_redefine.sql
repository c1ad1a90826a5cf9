-- Gives a schedule the definition its endpoint's code now declares (its times, target or
-- missed-tick policy changed); affects no row when the row changed since it was read (Version).
-- Parameters: 1 Endpoint (varchar), 2 Name (varchar), 3 Cron (varchar, NULL for an interval), 4 EveryMs (bigint, NULL for a cron expression), 5 Target (varchar), 6 Missed (varchar), 7 NextDue (timestamp UTC), 8 Version as read (bigint)
UPDATE {schema}."NimbusSchedules"
SET "Cron" = $3, "EveryMs" = $4, "Target" = $5, "Missed" = $6, "NextDue" = $7,
    "Version" = "Version" + 1, "DeclaredAt" = (now() AT TIME ZONE 'utc')
WHERE "Endpoint" = $1 AND "Name" = $2 AND "Version" = $8

-- Adds a schedule an endpoint declares; affects no row when the endpoint has one of that name
-- already (another instance declared it first).
-- Parameters: 1 Endpoint (varchar), 2 Name (varchar), 3 Cron (varchar, NULL for an interval), 4 EveryMs (bigint, NULL for a cron expression), 5 Target (varchar), 6 Missed (varchar), 7 NextDue (timestamp UTC)
INSERT INTO {schema}."NimbusSchedules" ("Endpoint", "Name", "Cron", "EveryMs", "Target", "Missed",
    "NextDue", "Version", "Fired", "MissedTicks", "DeclaredAt")
VALUES ($1, $2, $3, $4, $5, $6, $7, 1, 0, 0, (now() AT TIME ZONE 'utc'))
ON CONFLICT ("Endpoint", "Name") DO NOTHING

-- Adds a schedule an endpoint declares; affects no row when the endpoint has one of that name
-- already (another instance declared it first).
-- Parameters: 1 Endpoint (text), 2 Name (text), 3 Cron (text, NULL for an interval), 4 EveryMs (integer, NULL for a cron expression), 5 Target (text), 6 Missed (text), 7 NextDue (text UTC)
INSERT INTO "NimbusSchedules" ("Endpoint", "Name", "Cron", "EveryMs", "Target", "Missed",
    "NextDue", "Version", "Fired", "MissedTicks", "DeclaredAt")
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, 0, 0, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT ("Endpoint", "Name") DO NOTHING

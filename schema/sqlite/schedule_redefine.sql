-- Gives a schedule the definition its endpoint's code now declares (its times, target or
-- missed-tick policy changed); affects no row when the row changed since it was read (Version).
-- Parameters: 1 Endpoint (text), 2 Name (text), 3 Cron (text, NULL for an interval), 4 EveryMs (integer, NULL for a cron expression), 5 Target (text), 6 Missed (text), 7 NextDue (text UTC), 8 Version as read (integer)
UPDATE "NimbusSchedules"
SET "Cron" = ?3, "EveryMs" = ?4, "Target" = ?5, "Missed" = ?6, "NextDue" = ?7,
    "Version" = "Version" + 1, "DeclaredAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "Endpoint" = ?1 AND "Name" = ?2 AND "Version" = ?8

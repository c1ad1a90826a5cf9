INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusSchedules" ("Endpoint", "Name", "Cron", "EveryMs", "Target", "Missed",
    "NextDue", "Version", "Fired", "MissedTicks", "DeclaredAt")
VALUES ($1, $2, $3, $4, $5, $6, $7, 1, 0, 0, (now() AT TIME ZONE 'utc'))
ON CONFLICT ("Endpoint", "Name") DO NOTHING
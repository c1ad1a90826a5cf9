INSERT INTO "NimbusSchedules" ("Endpoint", "Name", "Cron", "EveryMs", "Target", "Missed",
    "NextDue", "Version", "Fired", "MissedTicks", "DeclaredAt")
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, 0, 0, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT ("Endpoint", "Name") DO NOTHING
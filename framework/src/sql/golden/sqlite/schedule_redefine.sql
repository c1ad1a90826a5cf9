UPDATE "NimbusSchedules"
SET "Cron" = ?3, "EveryMs" = ?4, "Target" = ?5, "Missed" = ?6, "NextDue" = ?7,
    "Version" = "Version" + 1, "DeclaredAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "Endpoint" = ?1 AND "Name" = ?2 AND "Version" = ?8
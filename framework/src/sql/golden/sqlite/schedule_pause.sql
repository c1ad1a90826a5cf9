UPDATE "NimbusSchedules"
SET "PausedAt" = strftime('%Y-%m-%d %H:%M:%f', 'now'), "PausedBy" = ?3, "Version" = "Version" + 1
WHERE "Endpoint" = ?1 AND "Name" = ?2 AND "PausedAt" IS NULL
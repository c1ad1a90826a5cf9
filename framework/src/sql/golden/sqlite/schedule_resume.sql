UPDATE "NimbusSchedules"
SET "PausedAt" = NULL, "PausedBy" = NULL, "NextDue" = ?3, "Version" = "Version" + 1
WHERE "Endpoint" = ?1 AND "Name" = ?2 AND "PausedAt" IS NOT NULL
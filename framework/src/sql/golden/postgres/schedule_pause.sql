UPDATE "Zeb]ra ""x"" 'y'"."NimbusSchedules"
SET "PausedAt" = (now() AT TIME ZONE 'utc'), "PausedBy" = $3, "Version" = "Version" + 1
WHERE "Endpoint" = $1 AND "Name" = $2 AND "PausedAt" IS NULL
-- Pauses a schedule: no instance fires it until it is resumed. Affects no row when it is paused
-- already or does not exist.
-- Parameters: 1 Endpoint (text), 2 Name (text), 3 PausedBy (text: who paused it, for operators)
UPDATE "NimbusSchedules"
SET "PausedAt" = strftime('%Y-%m-%d %H:%M:%f', 'now'), "PausedBy" = ?3, "Version" = "Version" + 1
WHERE "Endpoint" = ?1 AND "Name" = ?2 AND "PausedAt" IS NULL

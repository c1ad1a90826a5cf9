-- Resumes a paused schedule from its next tick after now: the ticks that came due while it was
-- paused are not fired. Affects no row when it is not paused or does not exist.
-- Parameters: 1 Endpoint (text), 2 Name (text), 3 NextDue (text UTC)
UPDATE "NimbusSchedules"
SET "PausedAt" = NULL, "PausedBy" = NULL, "NextDue" = ?3, "Version" = "Version" + 1
WHERE "Endpoint" = ?1 AND "Name" = ?2 AND "PausedAt" IS NOT NULL

-- Resumes a paused schedule from its next tick after now: the ticks that came due while it was
-- paused are not fired. Affects no row when it is not paused or does not exist.
-- Parameters: 1 Endpoint (varchar), 2 Name (varchar), 3 NextDue (timestamp UTC)
UPDATE {schema}."NimbusSchedules"
SET "PausedAt" = NULL, "PausedBy" = NULL, "NextDue" = $3, "Version" = "Version" + 1
WHERE "Endpoint" = $1 AND "Name" = $2 AND "PausedAt" IS NOT NULL

-- Refreshes LastSeenAt of a running bus (its heartbeat); affects no row when its row is gone
-- (cleaned up after a long silence) or marked stopped.
-- Parameters: 1 RunId (uuid)
UPDATE {schema}."NimbusInstances"
SET "LastSeenAt" = (now() AT TIME ZONE 'utc')
WHERE "RunId" = $1 AND "StoppedAt" IS NULL

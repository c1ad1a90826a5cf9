-- Marks a bus stopped (its stop() ran): its name is free again at once.
-- Parameters: 1 RunId (uuid)
UPDATE {schema}."NimbusInstances"
SET "StoppedAt" = (now() AT TIME ZONE 'utc'), "LastSeenAt" = (now() AT TIME ZONE 'utc')
WHERE "RunId" = $1

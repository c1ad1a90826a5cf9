-- Marks a bus stopped (its stop() ran): its name is free again at once.
-- Parameters: 1 RunId (text)
UPDATE "NimbusInstances"
SET "StoppedAt" = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    "LastSeenAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "RunId" = ?1

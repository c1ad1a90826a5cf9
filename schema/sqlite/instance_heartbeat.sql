-- Refreshes LastSeenAt of a running bus (its heartbeat); affects no row when its row is gone
-- (cleaned up after a long silence) or marked stopped.
-- Parameters: 1 RunId (text)
UPDATE "NimbusInstances"
SET "LastSeenAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "RunId" = ?1 AND "StoppedAt" IS NULL

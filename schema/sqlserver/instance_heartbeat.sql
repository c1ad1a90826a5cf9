-- Refreshes LastSeenAt of a running bus (its heartbeat); affects no row when its row is gone
-- (cleaned up after a long silence) or marked stopped.
-- Parameters: 1 RunId (uniqueidentifier)
UPDATE {schema}.[NimbusInstances]
SET [LastSeenAt] = SYSUTCDATETIME()
WHERE [RunId] = @P1 AND [StoppedAt] IS NULL;

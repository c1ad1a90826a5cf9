-- Marks a bus stopped (its stop() ran): its name is free again at once.
-- Parameters: 1 RunId (uniqueidentifier)
UPDATE {schema}.[NimbusInstances]
SET [StoppedAt] = SYSUTCDATETIME(), [LastSeenAt] = SYSUTCDATETIME()
WHERE [RunId] = @P1;

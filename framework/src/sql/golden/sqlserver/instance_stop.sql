UPDATE [Zeb]]ra "x" 'y'].[NimbusInstances]
SET [StoppedAt] = SYSUTCDATETIME(), [LastSeenAt] = SYSUTCDATETIME()
WHERE [RunId] = @P1;
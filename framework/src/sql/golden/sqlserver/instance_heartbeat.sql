UPDATE [Zeb]]ra "x" 'y'].[NimbusInstances]
SET [LastSeenAt] = SYSUTCDATETIME()
WHERE [RunId] = @P1 AND [StoppedAt] IS NULL;
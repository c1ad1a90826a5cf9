UPDATE [Zeb]]ra "x" 'y'].[NimbusSchedules] WITH (ROWLOCK)
SET [PausedAt] = SYSUTCDATETIME(), [PausedBy] = @P3, [Version] = [Version] + 1
WHERE [Endpoint] = @P1 AND [Name] = @P2 AND [PausedAt] IS NULL;
UPDATE [Zeb]]ra "x" 'y'].[NimbusSchedules] WITH (ROWLOCK)
SET [PausedAt] = NULL, [PausedBy] = NULL, [NextDue] = @P3, [Version] = [Version] + 1
WHERE [Endpoint] = @P1 AND [Name] = @P2 AND [PausedAt] IS NOT NULL;
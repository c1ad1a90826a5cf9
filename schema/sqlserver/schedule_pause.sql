-- Pauses a schedule: no instance fires it until it is resumed. Affects no row when it is paused
-- already or does not exist.
-- Parameters: 1 Endpoint (nvarchar(255)), 2 Name (nvarchar(255)), 3 PausedBy (nvarchar(255): who paused it, for operators)
UPDATE {schema}.[NimbusSchedules] WITH (ROWLOCK)
SET [PausedAt] = SYSUTCDATETIME(), [PausedBy] = @P3, [Version] = [Version] + 1
WHERE [Endpoint] = @P1 AND [Name] = @P2 AND [PausedAt] IS NULL;

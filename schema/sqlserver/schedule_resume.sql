-- Resumes a paused schedule from its next tick after now: the ticks that came due while it was
-- paused are not fired. Affects no row when it is not paused or does not exist.
-- Parameters: 1 Endpoint (nvarchar(255)), 2 Name (nvarchar(255)), 3 NextDue (datetime2 UTC)
UPDATE {schema}.[NimbusSchedules] WITH (ROWLOCK)
SET [PausedAt] = NULL, [PausedBy] = NULL, [NextDue] = @P3, [Version] = [Version] + 1
WHERE [Endpoint] = @P1 AND [Name] = @P2 AND [PausedAt] IS NOT NULL;

UPDATE [Zeb]]ra "x" 'y'].[NimbusLeases] WITH (ROWLOCK)
SET [LeasedUntil] = DATEADD(millisecond, @P2 % 1000, DATEADD(second, @P2 / 1000, SYSUTCDATETIME()))
WHERE [LeaseId] = @P1;
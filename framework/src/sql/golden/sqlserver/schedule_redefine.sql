UPDATE [Zeb]]ra "x" 'y'].[NimbusSchedules] WITH (ROWLOCK)
SET [Cron] = @P3, [EveryMs] = @P4, [Target] = @P5, [Missed] = @P6, [NextDue] = @P7,
    [Version] = [Version] + 1, [DeclaredAt] = SYSUTCDATETIME()
WHERE [Endpoint] = @P1 AND [Name] = @P2 AND [Version] = @P8;
INSERT INTO [Zeb]]ra "x" 'y'].[NimbusSchedules] ([Endpoint], [Name], [Cron], [EveryMs], [Target], [Missed],
    [NextDue], [Version], [Fired], [MissedTicks], [DeclaredAt])
SELECT @P1, @P2, @P3, @P4, @P5, @P6, @P7, 1, 0, 0, SYSUTCDATETIME()
WHERE NOT EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusSchedules] WITH (UPDLOCK, HOLDLOCK)
    WHERE [Endpoint] = @P1 AND [Name] = @P2);
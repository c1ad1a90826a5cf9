UPDATE [Zeb]]ra "x" 'y'].[NimbusSchedules] WITH (ROWLOCK)
SET [NextDue] = @P4,
    [Version] = [Version] + 1,
    [Fired] = [Fired] + @P5,
    [MissedTicks] = [MissedTicks] + @P6,
    [LastDue] = COALESCE(@P7, [LastDue]),
    [LastFiredAt] = CASE WHEN @P5 > 0 THEN SYSUTCDATETIME() ELSE [LastFiredAt] END,
    [LastFiredBy] = CASE WHEN @P5 > 0 THEN @P8 ELSE [LastFiredBy] END
WHERE [Endpoint] = @P1 AND [Name] = @P2 AND [Version] = @P3 AND [PausedAt] IS NULL;
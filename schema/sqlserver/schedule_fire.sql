-- Moves a due schedule on to its next tick, counting what it fired and missed; runs in the
-- transaction that sends the tick's message. Affects no row when another instance moved it
-- first (Version) or an operator paused it: that instance then sends nothing.
-- Parameters: 1 Endpoint (nvarchar(255)), 2 Name (nvarchar(255)), 3 Version as read (bigint), 4 NextDue (datetime2 UTC), 5 messages sent (bigint: 0 or 1), 6 ticks missed (bigint), 7 LastDue: the tick sent for (datetime2 UTC, NULL when none), 8 LastFiredBy (nvarchar(255))
UPDATE {schema}.[NimbusSchedules] WITH (ROWLOCK)
SET [NextDue] = @P4,
    [Version] = [Version] + 1,
    [Fired] = [Fired] + @P5,
    [MissedTicks] = [MissedTicks] + @P6,
    [LastDue] = COALESCE(@P7, [LastDue]),
    [LastFiredAt] = CASE WHEN @P5 > 0 THEN SYSUTCDATETIME() ELSE [LastFiredAt] END,
    [LastFiredBy] = CASE WHEN @P5 > 0 THEN @P8 ELSE [LastFiredBy] END
WHERE [Endpoint] = @P1 AND [Name] = @P2 AND [Version] = @P3 AND [PausedAt] IS NULL;

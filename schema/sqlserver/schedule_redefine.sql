-- Gives a schedule the definition its endpoint's code now declares (its times, target or
-- missed-tick policy changed); affects no row when the row changed since it was read (Version).
-- Parameters: 1 Endpoint (nvarchar(255)), 2 Name (nvarchar(255)), 3 Cron (nvarchar(255), NULL for an interval), 4 EveryMs (bigint, NULL for a cron expression), 5 Target (nvarchar(255)), 6 Missed (nvarchar(32)), 7 NextDue (datetime2 UTC), 8 Version as read (bigint)
UPDATE {schema}.[NimbusSchedules] WITH (ROWLOCK)
SET [Cron] = @P3, [EveryMs] = @P4, [Target] = @P5, [Missed] = @P6, [NextDue] = @P7,
    [Version] = [Version] + 1, [DeclaredAt] = SYSUTCDATETIME()
WHERE [Endpoint] = @P1 AND [Name] = @P2 AND [Version] = @P8;

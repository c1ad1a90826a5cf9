-- Adds a schedule an endpoint declares; affects no row when the endpoint has one of that name
-- already (another instance declared it first).
-- Parameters: 1 Endpoint (nvarchar(255)), 2 Name (nvarchar(255)), 3 Cron (nvarchar(255), NULL for an interval), 4 EveryMs (bigint, NULL for a cron expression), 5 Target (nvarchar(255)), 6 Missed (nvarchar(32)), 7 NextDue (datetime2 UTC)
INSERT INTO {schema}.[NimbusSchedules] ([Endpoint], [Name], [Cron], [EveryMs], [Target], [Missed],
    [NextDue], [Version], [Fired], [MissedTicks], [DeclaredAt])
SELECT @P1, @P2, @P3, @P4, @P5, @P6, @P7, 1, 0, 0, SYSUTCDATETIME()
WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.[NimbusSchedules] WITH (UPDLOCK, HOLDLOCK)
    WHERE [Endpoint] = @P1 AND [Name] = @P2);

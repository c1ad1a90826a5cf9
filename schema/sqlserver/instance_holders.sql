-- Lists the other live holders of an application and instance name: rows of other starts that
-- have not stopped and whose heartbeat is recent (within the given number of their own
-- heartbeat intervals, by database time).
-- Parameters: 1 Application (nvarchar(255)), 2 Instance (nvarchar(255)), 3 this start's RunId
-- (uniqueidentifier), 4 how many heartbeats a live instance may miss (int)
-- Returns: RunId, Host, ProcessId, SharesName, LastSeenAt, SecondsSinceSeen
SELECT [RunId], [Host], [ProcessId], [SharesName], [LastSeenAt],
    CAST(DATEDIFF(second, [LastSeenAt], SYSUTCDATETIME()) AS bigint)
FROM {schema}.[NimbusInstances]
WHERE [Application] = @P1 AND [Instance] = @P2 AND [RunId] <> @P3
    AND [StoppedAt] IS NULL
    AND [LastSeenAt] >= DATEADD(second, -(@P4 * [HeartbeatSeconds]), SYSUTCDATETIME())
ORDER BY [LastSeenAt] DESC;

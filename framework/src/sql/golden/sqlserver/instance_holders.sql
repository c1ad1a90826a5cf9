SELECT [RunId], [Host], [ProcessId], [SharesName], [LastSeenAt],
    CAST(DATEDIFF(second, [LastSeenAt], SYSUTCDATETIME()) AS bigint)
FROM [Zeb]]ra "x" 'y'].[NimbusInstances]
WHERE [Application] = @P1 AND [Instance] = @P2 AND [RunId] <> @P3
    AND [StoppedAt] IS NULL
    AND [LastSeenAt] >= DATEADD(second, -(@P4 * [HeartbeatSeconds]), SYSUTCDATETIME())
ORDER BY [LastSeenAt] DESC;
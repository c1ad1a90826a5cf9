SELECT [RunId], [Application], [Instance], [Host], [ProcessId], [Version], [Queues],
    [Handlers], [SharesName], [HeartbeatSeconds], [StartedAt], [LastSeenAt], [StoppedAt],
    CAST(DATEDIFF(second, [LastSeenAt], SYSUTCDATETIME()) AS bigint)
FROM [Zeb]]ra "x" 'y'].[NimbusInstances]
ORDER BY [Application], [Instance], [StartedAt] DESC;
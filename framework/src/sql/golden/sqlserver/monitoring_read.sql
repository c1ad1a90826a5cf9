SELECT [ReportedAt],
    CAST(DATEDIFF(millisecond, [ReportedAt], SYSUTCDATETIME()) AS bigint),
    CAST([RunId] AS nvarchar(36)), [Queue], [Application], [Instance], [PeriodMs], [Handled],
    [Failed], [Retried], [DeadLettered], [QueueLength], [ProcessingP50Us], [ProcessingP95Us],
    [CriticalP50Us], [CriticalP95Us], [ProcessingTimes], [CriticalTimes]
FROM [Zeb]]ra "x" 'y'].[NimbusMonitoring]
WHERE [ReportedAt] >= DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME())
ORDER BY [ReportedAt];
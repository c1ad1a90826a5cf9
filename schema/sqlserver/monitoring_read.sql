-- Reads the reports of the last given seconds (database time), oldest first, each with how long
-- ago it was written, for the console's charts. DATEADD and DATEDIFF take an int: windows are
-- hours, far below their limits.
-- Parameters: 1 how far back in seconds (bigint)
-- Returns: ReportedAt, AgeMs, RunId, Queue, Application, Instance, PeriodMs, Handled, Failed,
-- Retried, DeadLettered, QueueLength, ProcessingP50Us, ProcessingP95Us, CriticalP50Us,
-- CriticalP95Us, ProcessingTimes, CriticalTimes
SELECT [ReportedAt],
    CAST(DATEDIFF(millisecond, [ReportedAt], SYSUTCDATETIME()) AS bigint),
    CAST([RunId] AS nvarchar(36)), [Queue], [Application], [Instance], [PeriodMs], [Handled],
    [Failed], [Retried], [DeadLettered], [QueueLength], [ProcessingP50Us], [ProcessingP95Us],
    [CriticalP50Us], [CriticalP95Us], [ProcessingTimes], [CriticalTimes]
FROM {schema}.[NimbusMonitoring]
WHERE [ReportedAt] >= DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME())
ORDER BY [ReportedAt];

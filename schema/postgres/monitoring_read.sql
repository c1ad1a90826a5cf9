-- Reads the reports of the last given seconds (database time), oldest first, each with how long
-- ago it was written, for the console's charts.
-- Parameters: 1 how far back in seconds (bigint)
-- Returns: ReportedAt, AgeMs, RunId, Queue, Application, Instance, PeriodMs, Handled, Failed,
-- Retried, DeadLettered, QueueLength, ProcessingP50Us, ProcessingP95Us, CriticalP50Us,
-- CriticalP95Us, ProcessingTimes, CriticalTimes
SELECT "ReportedAt",
    CAST(EXTRACT(EPOCH FROM ((now() AT TIME ZONE 'utc') - "ReportedAt")) * 1000 AS bigint),
    CAST("RunId" AS text), "Queue", "Application", "Instance", "PeriodMs", "Handled", "Failed",
    "Retried", "DeadLettered", "QueueLength", "ProcessingP50Us", "ProcessingP95Us",
    "CriticalP50Us", "CriticalP95Us", "ProcessingTimes", "CriticalTimes"
FROM {schema}."NimbusMonitoring"
WHERE "ReportedAt" >= (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
ORDER BY "ReportedAt"

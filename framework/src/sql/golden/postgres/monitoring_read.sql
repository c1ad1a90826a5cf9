SELECT "ReportedAt",
    CAST(EXTRACT(EPOCH FROM ((now() AT TIME ZONE 'utc') - "ReportedAt")) * 1000 AS bigint),
    CAST("RunId" AS text), "Queue", "Application", "Instance", "PeriodMs", "Handled", "Failed",
    "Retried", "DeadLettered", "QueueLength", "ProcessingP50Us", "ProcessingP95Us",
    "CriticalP50Us", "CriticalP95Us", "ProcessingTimes", "CriticalTimes"
FROM "Zeb]ra ""x"" 'y'"."NimbusMonitoring"
WHERE "ReportedAt" >= (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
ORDER BY "ReportedAt"
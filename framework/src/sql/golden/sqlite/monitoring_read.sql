SELECT "ReportedAt",
    CAST((julianday('now') - julianday("ReportedAt")) * 86400000 AS INTEGER),
    "RunId", "Queue", "Application", "Instance", "PeriodMs", "Handled", "Failed", "Retried",
    "DeadLettered", "QueueLength", "ProcessingP50Us", "ProcessingP95Us", "CriticalP50Us",
    "CriticalP95Us", "ProcessingTimes", "CriticalTimes"
FROM "NimbusMonitoring"
WHERE "ReportedAt" >= strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
ORDER BY "ReportedAt"
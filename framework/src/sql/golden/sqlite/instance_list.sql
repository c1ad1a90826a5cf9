SELECT "RunId", "Application", "Instance", "Host", "ProcessId", "Version", "Queues",
    "Handlers", "SharesName", "HeartbeatSeconds", "StartedAt", "LastSeenAt", "StoppedAt",
    CAST((julianday('now') - julianday("LastSeenAt")) * 86400 AS INTEGER)
FROM "NimbusInstances"
ORDER BY "Application", "Instance", "StartedAt" DESC
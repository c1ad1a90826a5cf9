SELECT "RunId", "Application", "Instance", "Host", "ProcessId", "Version", "Queues",
    "Handlers", "SharesName", "HeartbeatSeconds", "StartedAt", "LastSeenAt", "StoppedAt",
    CAST(EXTRACT(EPOCH FROM (now() AT TIME ZONE 'utc') - "LastSeenAt") AS bigint)
FROM "Zeb]ra ""x"" 'y'"."NimbusInstances"
ORDER BY "Application", "Instance", "StartedAt" DESC
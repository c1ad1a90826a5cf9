SELECT "RunId", "Host", "ProcessId", "SharesName", "LastSeenAt",
    CAST((julianday('now') - julianday("LastSeenAt")) * 86400 AS INTEGER)
FROM "NimbusInstances"
WHERE "Application" = ?1 AND "Instance" = ?2 AND "RunId" <> ?3
    AND "StoppedAt" IS NULL
    AND "LastSeenAt" >= strftime('%Y-%m-%d %H:%M:%f', 'now', (-(?4 * "HeartbeatSeconds")) || ' seconds')
ORDER BY "LastSeenAt" DESC
-- Lists the other live holders of an application and instance name: rows of other starts that
-- have not stopped and whose heartbeat is recent (within the given number of their own
-- heartbeat intervals, by database time).
-- Parameters: 1 Application (text), 2 Instance (text), 3 this start's RunId (text),
-- 4 how many heartbeats a live instance may miss (integer)
-- Returns: RunId, Host, ProcessId, SharesName, LastSeenAt, SecondsSinceSeen
SELECT "RunId", "Host", "ProcessId", "SharesName", "LastSeenAt",
    CAST((julianday('now') - julianday("LastSeenAt")) * 86400 AS INTEGER)
FROM "NimbusInstances"
WHERE "Application" = ?1 AND "Instance" = ?2 AND "RunId" <> ?3
    AND "StoppedAt" IS NULL
    AND "LastSeenAt" >= strftime('%Y-%m-%d %H:%M:%f', 'now', (-(?4 * "HeartbeatSeconds")) || ' seconds')
ORDER BY "LastSeenAt" DESC

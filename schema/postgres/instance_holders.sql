-- Lists the other live holders of an application and instance name: rows of other starts that
-- have not stopped and whose heartbeat is recent (within the given number of their own
-- heartbeat intervals, by database time).
-- Parameters: 1 Application (varchar), 2 Instance (varchar), 3 this start's RunId (uuid),
-- 4 how many heartbeats a live instance may miss (int)
-- Returns: RunId, Host, ProcessId, SharesName, LastSeenAt, SecondsSinceSeen
SELECT "RunId", "Host", "ProcessId", "SharesName", "LastSeenAt",
    CAST(EXTRACT(EPOCH FROM (now() AT TIME ZONE 'utc') - "LastSeenAt") AS bigint)
FROM {schema}."NimbusInstances"
WHERE "Application" = $1 AND "Instance" = $2 AND "RunId" <> $3
    AND "StoppedAt" IS NULL
    AND "LastSeenAt" >= (now() AT TIME ZONE 'utc') - ($4::int * "HeartbeatSeconds") * interval '1 second'
ORDER BY "LastSeenAt" DESC

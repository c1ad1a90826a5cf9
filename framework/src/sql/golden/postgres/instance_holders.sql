SELECT "RunId", "Host", "ProcessId", "SharesName", "LastSeenAt",
    CAST(EXTRACT(EPOCH FROM (now() AT TIME ZONE 'utc') - "LastSeenAt") AS bigint)
FROM "Zeb]ra ""x"" 'y'"."NimbusInstances"
WHERE "Application" = $1 AND "Instance" = $2 AND "RunId" <> $3
    AND "StoppedAt" IS NULL
    AND "LastSeenAt" >= (now() AT TIME ZONE 'utc') - ($4::int * "HeartbeatSeconds") * interval '1 second'
ORDER BY "LastSeenAt" DESC
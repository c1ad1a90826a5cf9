-- Lists every registered start of a bus, with how long ago (database time) it was last seen.
-- Parameters: none
-- Returns: RunId, Application, Instance, Host, ProcessId, Version, Queues, Handlers,
-- SharesName, HeartbeatSeconds, StartedAt, LastSeenAt, StoppedAt, SecondsSinceSeen
SELECT "RunId", "Application", "Instance", "Host", "ProcessId", "Version", "Queues",
    "Handlers", "SharesName", "HeartbeatSeconds", "StartedAt", "LastSeenAt", "StoppedAt",
    CAST(EXTRACT(EPOCH FROM (now() AT TIME ZONE 'utc') - "LastSeenAt") AS bigint)
FROM {schema}."NimbusInstances"
ORDER BY "Application", "Instance", "StartedAt" DESC

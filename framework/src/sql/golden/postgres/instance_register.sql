INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusInstances" ("RunId", "Application", "Instance", "Host",
    "ProcessId", "Version", "Queues", "Handlers", "SharesName", "HeartbeatSeconds",
    "StartedAt", "LastSeenAt")
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
    (now() AT TIME ZONE 'utc'), (now() AT TIME ZONE 'utc'))
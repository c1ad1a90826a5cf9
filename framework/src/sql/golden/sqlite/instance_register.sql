INSERT INTO "NimbusInstances" ("RunId", "Application", "Instance", "Host",
    "ProcessId", "Version", "Queues", "Handlers", "SharesName", "HeartbeatSeconds",
    "StartedAt", "LastSeenAt")
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,
    strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'))
-- Registers a start of a bus: its names, where it runs, what it receives and handles, and its
-- heartbeat interval; started and seen now (database time).
-- Parameters: 1 RunId (uuid), 2 Application (varchar), 3 Instance (varchar), 4 Host
-- (varchar), 5 ProcessId (bigint), 6 Version (varchar), 7 Queues (text: comma-separated),
-- 8 Handlers (text: comma-separated message types), 9 SharesName (int: 1 when the application
-- lets several processes share the name), 10 HeartbeatSeconds (int)
INSERT INTO {schema}."NimbusInstances" ("RunId", "Application", "Instance", "Host",
    "ProcessId", "Version", "Queues", "Handlers", "SharesName", "HeartbeatSeconds",
    "StartedAt", "LastSeenAt")
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
    (now() AT TIME ZONE 'utc'), (now() AT TIME ZONE 'utc'))

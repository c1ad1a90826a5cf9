-- Registers a start of a bus: its names, where it runs, what it receives and handles, and its
-- heartbeat interval; started and seen now (database time).
-- Parameters: 1 RunId (text), 2 Application (text), 3 Instance (text), 4 Host (text),
-- 5 ProcessId (integer), 6 Version (text), 7 Queues (text: comma-separated), 8 Handlers (text:
-- comma-separated message types), 9 SharesName (integer: 1 when the application lets several
-- processes share the name), 10 HeartbeatSeconds (integer)
INSERT INTO "NimbusInstances" ("RunId", "Application", "Instance", "Host",
    "ProcessId", "Version", "Queues", "Handlers", "SharesName", "HeartbeatSeconds",
    "StartedAt", "LastSeenAt")
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,
    strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'))

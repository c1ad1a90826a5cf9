-- Registers a start of a bus: its names, where it runs, what it receives and handles, and its
-- heartbeat interval; started and seen now (database time).
-- Parameters: 1 RunId (uniqueidentifier), 2 Application (nvarchar(255)), 3 Instance
-- (nvarchar(255)), 4 Host (nvarchar(255)), 5 ProcessId (bigint), 6 Version (nvarchar(64)),
-- 7 Queues (nvarchar(max): comma-separated), 8 Handlers (nvarchar(max): comma-separated message
-- types), 9 SharesName (int: 1 when the application lets several processes share the name),
-- 10 HeartbeatSeconds (int)
INSERT INTO {schema}.[NimbusInstances] ([RunId], [Application], [Instance], [Host],
    [ProcessId], [Version], [Queues], [Handlers], [SharesName], [HeartbeatSeconds],
    [StartedAt], [LastSeenAt])
VALUES (@P1, @P2, @P3, @P4, @P5, @P6, @P7, @P8, @P9, @P10,
    SYSUTCDATETIME(), SYSUTCDATETIME());

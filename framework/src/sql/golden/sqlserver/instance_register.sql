INSERT INTO [Zeb]]ra "x" 'y'].[NimbusInstances] ([RunId], [Application], [Instance], [Host],
    [ProcessId], [Version], [Queues], [Handlers], [SharesName], [HeartbeatSeconds],
    [StartedAt], [LastSeenAt])
VALUES (@P1, @P2, @P3, @P4, @P5, @P6, @P7, @P8, @P9, @P10,
    SYSUTCDATETIME(), SYSUTCDATETIME());
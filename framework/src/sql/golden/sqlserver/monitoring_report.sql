INSERT INTO [Zeb]]ra "x" 'y'].[NimbusMonitoring] ([ReportedAt], [RunId], [Queue], [Application],
    [Instance], [PeriodMs], [Handled], [Failed], [Retried], [DeadLettered], [QueueLength],
    [ProcessingP50Us], [ProcessingP95Us], [CriticalP50Us], [CriticalP95Us], [ProcessingTimes],
    [CriticalTimes])
VALUES (SYSUTCDATETIME(), @P1, @P2, @P3, @P4, @P5, @P6, @P7, @P8, @P9, @P10, @P11, @P12, @P13, @P14, @P15, @P16);
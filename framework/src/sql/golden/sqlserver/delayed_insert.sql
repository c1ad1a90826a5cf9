INSERT INTO [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] ([Id], [Destination], [Due], [CorrelationId], [ReplyToAddress], [Expires], [Headers], [Body])
VALUES (@P1, @P2,
    COALESCE(@P10, DATEADD(millisecond, COALESCE(@P9, 0) % 1000, DATEADD(second, COALESCE(@P9, 0) / 1000, SYSUTCDATETIME()))),
    @P3, @P4,
    COALESCE(@P8,
        CASE WHEN @P5 IS NULL THEN NULL
             ELSE DATEADD(millisecond, @P5 % 1000, DATEADD(second, @P5 / 1000, GETUTCDATE())) END),
    @P6, @P7);
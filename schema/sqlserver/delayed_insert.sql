-- Inserts a delayed message into NimbusDelayedMessages, due after its delay or at its due time.
-- Parameters: 1 Id (uniqueidentifier), 2 Destination (nvarchar(255)), 3 CorrelationId (varchar(255)), 4 ReplyToAddress (varchar(255)), 5 time to be received in ms (bigint, NULL for none), 6 Headers (nvarchar(max)), 7 Body (varbinary(max)), 8 absolute Expires (datetime, NULL for none; wins over 5), 9 delay in ms (bigint, NULL for none), 10 absolute due time (datetime2, NULL for none; wins over 9)
INSERT INTO {schema}.[NimbusDelayedMessages] ([Id], [Destination], [Due], [CorrelationId], [ReplyToAddress], [Expires], [Headers], [Body])
VALUES (@P1, @P2,
    COALESCE(@P10, DATEADD(millisecond, COALESCE(@P9, 0) % 1000, DATEADD(second, COALESCE(@P9, 0) / 1000, SYSUTCDATETIME()))),
    @P3, @P4,
    COALESCE(@P8,
        CASE WHEN @P5 IS NULL THEN NULL
             ELSE DATEADD(millisecond, @P5 % 1000, DATEADD(second, @P5 / 1000, GETUTCDATE())) END),
    @P6, @P7);

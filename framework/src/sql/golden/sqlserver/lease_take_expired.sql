DECLARE @lease TABLE (
    [Id]             nvarchar(255)    NULL,
    [CorrelationId]  nvarchar(max)    NULL,
    [ReplyToAddress] nvarchar(max)    NULL,
    [Headers]        nvarchar(max)    NULL,
    [Body]           varbinary(max)   NULL,
    [Expires]        datetime2        NULL
);
DELETE FROM [Zeb]]ra "x" 'y'].[NimbusLeases] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers],
    deleted.[Body], deleted.[Expires]
INTO @lease
WHERE [LeasedUntil] < SYSUTCDATETIME() AND [LeaseId] = (
    SELECT TOP (1) [LeaseId]
    FROM [Zeb]]ra "x" 'y'].[NimbusLeases] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Queue] = @P1 AND [LeasedUntil] < SYSUTCDATETIME()
    ORDER BY [LeasedUntil]);
SELECT [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body],
    CAST(CASE WHEN [Expires] IS NULL THEN 0
              WHEN [Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [Expires]
FROM @lease;
DECLARE @due TABLE (
    [Id]             uniqueidentifier NULL,
    [Destination]    nvarchar(255)    NULL,
    [Due]            datetime2        NULL,
    [CorrelationId]  nvarchar(max)    NULL,
    [ReplyToAddress] nvarchar(max)    NULL,
    [Expires]        datetime2        NULL,
    [Headers]        nvarchar(max)    NULL,
    [Body]           varbinary(max)   NULL,
    [RowVersion]     bigint           NULL
);
DELETE FROM [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[Id], deleted.[Destination], deleted.[Due], deleted.[CorrelationId],
    deleted.[ReplyToAddress], deleted.[Expires], deleted.[Headers], deleted.[Body],
    deleted.[RowVersion]
INTO @due
WHERE [Due] <= SYSUTCDATETIME() AND [RowVersion] IN (
    SELECT TOP (@P1) [RowVersion]
    FROM [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Due] <= SYSUTCDATETIME()
    ORDER BY [Due], [RowVersion]);
SELECT [Id], [Destination], [CorrelationId], [ReplyToAddress], [Expires], [Headers], [Body]
FROM @due
ORDER BY [Due], [RowVersion];
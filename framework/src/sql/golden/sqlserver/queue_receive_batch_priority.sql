DECLARE @messages TABLE (
    [Id]             uniqueidentifier NULL,
    [CorrelationId]  nvarchar(max)    NULL,
    [ReplyToAddress] nvarchar(max)    NULL,
    [Headers]        nvarchar(max)    NULL,
    [Body]           varbinary(max)   NULL,
    [Expires]        datetime2        NULL,
    [RowVersion]     bigint           NOT NULL,
    [Priority]       smallint         NOT NULL
);
DELETE FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers],
    deleted.[Body], deleted.[Expires], deleted.[RowVersion], deleted.[Priority]
INTO @messages
WHERE [RowVersion] IN (
    SELECT TOP (@P1) [RowVersion]
    FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (UPDLOCK, READPAST, ROWLOCK)
    ORDER BY [Priority] DESC, [RowVersion]);
SELECT [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body],
    CAST(CASE WHEN [Expires] IS NULL THEN 0
              WHEN [Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [Expires]
FROM @messages
ORDER BY [Priority] DESC, [RowVersion];
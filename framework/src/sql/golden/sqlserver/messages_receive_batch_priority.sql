DECLARE @messages TABLE (
    [MessageId]    uniqueidentifier NOT NULL,
    [Body]         varbinary(max)   NULL,
    [ExpiresAt]    datetime2        NULL,
    [VisibleAfter] datetime2        NOT NULL,
    [Priority]     smallint         NOT NULL
);
DELETE FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[MessageId], deleted.[Body], deleted.[ExpiresAt], deleted.[VisibleAfter],
    deleted.[Priority]
INTO @messages
WHERE [MessageId] IN (
    SELECT TOP (@P2) [MessageId]
    FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()
    ORDER BY [Priority] DESC, [VisibleAfter], [MessageId]);
SELECT [MessageId], CAST(NULL AS varchar(255)) AS [CorrelationId],
    CAST(NULL AS varchar(255)) AS [ReplyToAddress], CAST(NULL AS nvarchar(max)) AS [Headers],
    [Body],
    CAST(CASE WHEN [ExpiresAt] IS NULL THEN 0
              WHEN [ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [ExpiresAt]
FROM @messages
ORDER BY [Priority] DESC, [VisibleAfter], [MessageId];
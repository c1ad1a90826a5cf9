DECLARE @messages TABLE (
    [MessageId]    uniqueidentifier NOT NULL,
    [Body]         varbinary(max)   NULL,
    [ExpiresAt]    datetime2        NULL,
    [VisibleAfter] datetime2        NOT NULL,
    [GroupKey]     varchar(255)     NULL,
    [GroupPlace]   bigint           NULL
);
DELETE FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[MessageId], deleted.[Body], deleted.[ExpiresAt], deleted.[VisibleAfter],
    deleted.[GroupKey], deleted.[GroupPlace]
INTO @messages
WHERE [MessageId] IN (
    SELECT TOP (@P2) q.[MessageId]
    FROM [Zeb]]ra "x" 'y'].[NimbusMessages] AS q WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE q.[Destination] = @P1 AND q.[VisibleAfter] <= SYSUTCDATETIME()
      AND (q.[GroupKey] IS NULL OR NOT EXISTS (
          SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusMessages] AS earlier
          WHERE earlier.[Destination] = q.[Destination] AND earlier.[GroupKey] = q.[GroupKey]
            AND (earlier.[GroupPlace] < q.[GroupPlace]
                 OR (earlier.[GroupPlace] = q.[GroupPlace] AND earlier.[MessageId] < q.[MessageId]))))
    ORDER BY q.[VisibleAfter], q.[MessageId]);
SELECT [MessageId], CAST(NULL AS varchar(255)) AS [CorrelationId],
    CAST(NULL AS varchar(255)) AS [ReplyToAddress], CAST(NULL AS nvarchar(max)) AS [Headers],
    [Body],
    CAST(CASE WHEN [ExpiresAt] IS NULL THEN 0
              WHEN [ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [ExpiresAt], [GroupKey], [GroupPlace] AS [Place]
FROM @messages
ORDER BY [VisibleAfter], [MessageId];
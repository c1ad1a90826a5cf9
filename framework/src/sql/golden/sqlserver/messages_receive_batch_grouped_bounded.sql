DECLARE @taken TABLE ([MessageId] uniqueidentifier NOT NULL);
DECLARE @messages TABLE (
    [MessageId]    uniqueidentifier NOT NULL,
    [Body]         varbinary(max)   NULL,
    [ExpiresAt]    datetime2        NULL,
    [VisibleAfter] datetime2        NOT NULL,
    [GroupKey]     varchar(255)     NULL,
    [GroupPlace]   bigint           NULL
);
INSERT INTO @taken ([MessageId])
SELECT TOP (@P2) q.[MessageId]
FROM (SELECT TOP (256) w.[MessageId], w.[VisibleAfter]
      FROM [Zeb]]ra "x" 'y'].[NimbusMessages] AS w WITH (READPAST)
      WHERE w.[Destination] = @P1 AND w.[VisibleAfter] <= SYSUTCDATETIME()
      ORDER BY w.[VisibleAfter], w.[MessageId]) AS front
JOIN [Zeb]]ra "x" 'y'].[NimbusMessages] AS q WITH (UPDLOCK, READPAST, ROWLOCK)
    ON q.[Destination] = @P1 AND q.[MessageId] = front.[MessageId]
WHERE q.[GroupKey] IS NULL OR NOT EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusMessages] AS earlier
    WHERE earlier.[Destination] = q.[Destination] AND earlier.[GroupKey] = q.[GroupKey]
      AND (earlier.[GroupPlace] < q.[GroupPlace]
           OR (earlier.[GroupPlace] = q.[GroupPlace] AND earlier.[MessageId] < q.[MessageId])))
ORDER BY front.[VisibleAfter], front.[MessageId];
IF @P3 = 1 AND NOT EXISTS (SELECT 1 FROM @taken)
    INSERT INTO @taken ([MessageId])
    SELECT TOP (@P2) q.[MessageId]
    FROM (SELECT g.[MessageId],
                 ROW_NUMBER() OVER (PARTITION BY g.[GroupKey]
                                    ORDER BY g.[GroupPlace], g.[MessageId]) AS [Rank]
          FROM [Zeb]]ra "x" 'y'].[NimbusMessages] AS g
          WHERE g.[Destination] = @P1 AND g.[GroupKey] IS NOT NULL) AS heads
    JOIN [Zeb]]ra "x" 'y'].[NimbusMessages] AS q WITH (UPDLOCK, READPAST, ROWLOCK)
        ON q.[Destination] = @P1 AND q.[MessageId] = heads.[MessageId]
    WHERE heads.[Rank] = 1 AND q.[VisibleAfter] <= SYSUTCDATETIME();
DELETE FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (ROWLOCK)
OUTPUT deleted.[MessageId], deleted.[Body], deleted.[ExpiresAt], deleted.[VisibleAfter],
    deleted.[GroupKey], deleted.[GroupPlace]
INTO @messages
WHERE [Destination] = @P1 AND [MessageId] IN (SELECT [MessageId] FROM @taken);
SELECT [MessageId], CAST(NULL AS varchar(255)) AS [CorrelationId],
    CAST(NULL AS varchar(255)) AS [ReplyToAddress], CAST(NULL AS nvarchar(max)) AS [Headers],
    [Body],
    CAST(CASE WHEN [ExpiresAt] IS NULL THEN 0
              WHEN [ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [ExpiresAt], [GroupKey], [GroupPlace] AS [Place]
FROM @messages
ORDER BY [VisibleAfter], [MessageId];
DECLARE @taken TABLE ([RowVersion] bigint NOT NULL);
DECLARE @messages TABLE (
    [Id]             uniqueidentifier NULL,
    [CorrelationId]  nvarchar(max)    NULL,
    [ReplyToAddress] nvarchar(max)    NULL,
    [Headers]        nvarchar(max)    NULL,
    [Body]           varbinary(max)   NULL,
    [Expires]        datetime2        NULL,
    [GroupKey]       varchar(255)     NULL,
    [GroupPosition]  bigint           NULL,
    [RowVersion]     bigint           NOT NULL
);
INSERT INTO @taken ([RowVersion])
SELECT TOP (@P1) q.[RowVersion]
FROM (SELECT TOP (256) w.[RowVersion]
      FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] AS w WITH (READPAST)
      ORDER BY w.[RowVersion]) AS front
JOIN [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] AS q WITH (UPDLOCK, READPAST, ROWLOCK) ON q.[RowVersion] = front.[RowVersion]
WHERE (q.[NotBefore] IS NULL OR q.[NotBefore] <= GETUTCDATE())
  AND (q.[GroupKey] IS NULL OR (
      NOT EXISTS (
          SELECT 1 FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] AS older
          WHERE older.[GroupKey] = q.[GroupKey]
            AND older.[RowVersion] < COALESCE(q.[GroupPosition], q.[RowVersion]))
      AND NOT EXISTS (
          SELECT 1 FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] AS older
          WHERE older.[GroupKey] = q.[GroupKey]
            AND older.[GroupPosition] < COALESCE(q.[GroupPosition], q.[RowVersion]))))
ORDER BY front.[RowVersion];
IF @P2 = 1 AND NOT EXISTS (SELECT 1 FROM @taken)
    INSERT INTO @taken ([RowVersion])
    SELECT TOP (@P1) q.[RowVersion]
    FROM (SELECT g.[GroupKey], MIN(g.[RowVersion]) AS [First]
          FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] AS g
          WHERE g.[GroupKey] IS NOT NULL
          GROUP BY g.[GroupKey]) AS groups
    CROSS APPLY (
        SELECT groups.[First] AS [RowVersion]
        UNION ALL
        SELECT retry.[RowVersion]
        FROM (SELECT TOP (1) r.[RowVersion]
              FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] AS r
              WHERE r.[GroupPosition] IS NOT NULL AND r.[GroupKey] = groups.[GroupKey]
              ORDER BY r.[GroupPosition]) AS retry) AS candidate
    JOIN [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] AS q WITH (UPDLOCK, READPAST, ROWLOCK) ON q.[RowVersion] = candidate.[RowVersion]
    WHERE (q.[NotBefore] IS NULL OR q.[NotBefore] <= GETUTCDATE())
      AND groups.[First] >= COALESCE(q.[GroupPosition], q.[RowVersion])
      AND NOT EXISTS (
          SELECT 1 FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] AS older
          WHERE older.[GroupKey] = q.[GroupKey]
            AND older.[GroupPosition] < COALESCE(q.[GroupPosition], q.[RowVersion]));
DELETE FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (ROWLOCK)
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers],
    deleted.[Body], deleted.[Expires], deleted.[GroupKey], deleted.[GroupPosition],
    deleted.[RowVersion]
INTO @messages
WHERE [RowVersion] IN (SELECT [RowVersion] FROM @taken);
SELECT [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body],
    CAST(CASE WHEN [Expires] IS NULL THEN 0
              WHEN [Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [Expires], [GroupKey], COALESCE([GroupPosition], [RowVersion]) AS [Place]
FROM @messages
ORDER BY [RowVersion];
WITH message AS (
    SELECT TOP (1) *
    FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (UPDLOCK, READPAST, ROWLOCK)
    ORDER BY [RowVersion])
DELETE FROM message
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers], deleted.[Body],
    CAST(CASE WHEN deleted.[Expires] IS NULL THEN 0
              WHEN deleted.[Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    deleted.[Expires];
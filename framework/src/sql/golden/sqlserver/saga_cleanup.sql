DELETE FROM [Zeb]]ra "x" 'y'].[NimbusSagas]
WHERE [Id] IN (
    SELECT TOP (@P2) [Id] FROM [Zeb]]ra "x" 'y'].[NimbusSagas] WITH (READPAST)
    WHERE [CompletedAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME()));
DELETE TOP (@P2) FROM [Zeb]]ra "x" 'y'].[NimbusBodies] WITH (READPAST)
WHERE [Expires] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
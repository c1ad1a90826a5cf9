DELETE TOP (@P2) FROM [Zeb]]ra "x" 'y'].[NimbusLimits] WITH (READPAST)
WHERE [ReadyAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
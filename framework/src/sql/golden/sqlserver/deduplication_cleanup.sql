DELETE TOP (@P2) FROM [Zeb]]ra "x" 'y'].[NimbusDeduplication] WITH (READPAST)
WHERE [ExpiresAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
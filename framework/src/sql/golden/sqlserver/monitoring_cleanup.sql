DELETE TOP (@P2) FROM [Zeb]]ra "x" 'y'].[NimbusMonitoring] WITH (READPAST)
WHERE [ReportedAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
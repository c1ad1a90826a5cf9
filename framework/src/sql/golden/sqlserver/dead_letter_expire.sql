DELETE FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters]
WHERE [MessageId] IN (
    SELECT TOP (@P2) [MessageId] FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters] WITH (READPAST)
    WHERE [FailedAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME()));
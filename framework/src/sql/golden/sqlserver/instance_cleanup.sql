DELETE FROM [Zeb]]ra "x" 'y'].[NimbusInstances]
WHERE [LastSeenAt] < DATEADD(second, -CAST(@P1 AS int), SYSUTCDATETIME());
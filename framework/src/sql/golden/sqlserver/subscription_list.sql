SELECT [SubscriberQueue] FROM [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
WHERE [TopicName] = @P1
    AND [LastSeenAt] >= DATEADD(second, -CAST(COALESCE([IdleSeconds], @P2) AS int), SYSUTCDATETIME())
ORDER BY [SubscriberQueue];
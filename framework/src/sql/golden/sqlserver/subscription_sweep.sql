DELETE FROM [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
OUTPUT deleted.[TopicName], deleted.[SubscriberQueue]
WHERE [LastSeenAt] < DATEADD(second, -CAST(COALESCE([IdleSeconds], @P1) AS int), SYSUTCDATETIME());
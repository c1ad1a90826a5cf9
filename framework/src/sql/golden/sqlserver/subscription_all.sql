SELECT [TopicName], [SubscriberQueue], [LastSeenAt], [IdleSeconds]
FROM [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
ORDER BY [TopicName], [SubscriberQueue];
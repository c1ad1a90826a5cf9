-- Lists every subscription, whatever its heartbeat.
-- Parameters: none
-- Returns: TopicName, SubscriberQueue, LastSeenAt, IdleSeconds
SELECT [TopicName], [SubscriberQueue], [LastSeenAt], [IdleSeconds]
FROM [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
ORDER BY [TopicName], [SubscriberQueue];

-- Lists every subscription, whatever its heartbeat.
-- Parameters: none
-- Returns: TopicName, SubscriberQueue, LastSeenAt
SELECT [TopicName], [SubscriberQueue], [LastSeenAt]
FROM [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
ORDER BY [TopicName], [SubscriberQueue];

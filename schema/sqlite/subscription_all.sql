-- Lists every subscription, whatever its heartbeat.
-- Parameters: none
-- Returns: TopicName, SubscriberQueue, LastSeenAt, IdleSeconds
SELECT "TopicName", "SubscriberQueue", "LastSeenAt", "IdleSeconds"
FROM "NimbusSubscriptions"
ORDER BY "TopicName", "SubscriberQueue"

-- Lists every subscription, whatever its heartbeat.
-- Parameters: none
-- Returns: TopicName, SubscriberQueue, LastSeenAt
SELECT "TopicName", "SubscriberQueue", "LastSeenAt"
FROM "NimbusSubscriptions"
ORDER BY "TopicName", "SubscriberQueue"

-- Lists every subscription, whatever its heartbeat.
-- Parameters: none
-- Returns: TopicName, SubscriberQueue, LastSeenAt, IdleSeconds
SELECT "TopicName", "SubscriberQueue", "LastSeenAt", "IdleSeconds"
FROM {schema}."NimbusSubscriptions"
ORDER BY "TopicName", "SubscriberQueue"

SELECT "TopicName", "SubscriberQueue", "LastSeenAt", "IdleSeconds"
FROM "NimbusSubscriptions"
ORDER BY "TopicName", "SubscriberQueue"
UPDATE "NimbusSubscriptions"
SET "LastSeenAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "TopicName" = ?1 AND "SubscriberQueue" = ?2
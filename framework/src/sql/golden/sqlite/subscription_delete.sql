DELETE FROM "NimbusSubscriptions"
WHERE "TopicName" = ?1 AND "SubscriberQueue" = ?2
SELECT count(*) FROM "NimbusSubscriptions"
WHERE "SubscriberQueue" = ?1
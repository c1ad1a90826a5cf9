SELECT "SubscriberQueue" FROM "NimbusSubscriptions"
WHERE "TopicName" = ?1
    AND "LastSeenAt" >= strftime('%Y-%m-%d %H:%M:%f', 'now', (-COALESCE("IdleSeconds", ?2)) || ' seconds')
ORDER BY "SubscriberQueue"
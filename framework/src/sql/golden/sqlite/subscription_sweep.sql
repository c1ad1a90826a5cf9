DELETE FROM "NimbusSubscriptions"
WHERE "LastSeenAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-COALESCE("IdleSeconds", ?1)) || ' seconds')
RETURNING "TopicName", "SubscriberQueue"
-- Deletes and returns the subscriptions not seen for the idle period their own subscriber
-- promised (IdleSeconds), or the sweeper's for rows from before that column.
-- Parameters: 1 the sweeper's idle period in seconds (integer; for rows without IdleSeconds)
-- Returns: TopicName, SubscriberQueue
DELETE FROM "NimbusSubscriptions"
WHERE "LastSeenAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-COALESCE("IdleSeconds", ?1)) || ' seconds')
RETURNING "TopicName", "SubscriberQueue"

-- Deletes and returns the subscriptions not seen for the idle period.
-- Parameters: 1 idle period in seconds (integer)
-- Returns: TopicName, SubscriberQueue
DELETE FROM "NimbusSubscriptions"
WHERE "LastSeenAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ?1 || ' seconds')
RETURNING "TopicName", "SubscriberQueue"

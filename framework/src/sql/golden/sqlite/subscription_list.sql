-- Lists the queues subscribed to a topic whose heartbeat is within the idle period.
-- Parameters: 1 TopicName (text), 2 idle period in seconds (integer; rows not seen for longer are skipped)
-- Returns: SubscriberQueue
SELECT "SubscriberQueue" FROM "NimbusSubscriptions"
WHERE "TopicName" = ?1
    AND "LastSeenAt" >= strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ?2 || ' seconds')
ORDER BY "SubscriberQueue"

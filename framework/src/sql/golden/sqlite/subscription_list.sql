-- Lists the queues subscribed to a topic that are live: seen within the idle period their own
-- subscriber promised (IdleSeconds), or within the reader's for rows from before that column.
-- Parameters: 1 TopicName (text), 2 the reader's idle period in seconds (integer; for rows without IdleSeconds)
-- Returns: SubscriberQueue
SELECT "SubscriberQueue" FROM "NimbusSubscriptions"
WHERE "TopicName" = ?1
    AND "LastSeenAt" >= strftime('%Y-%m-%d %H:%M:%f', 'now', (-COALESCE("IdleSeconds", ?2)) || ' seconds')
ORDER BY "SubscriberQueue"

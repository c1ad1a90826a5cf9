-- Lists the queues subscribed to a topic that are live: seen within the idle period their own
-- subscriber promised (IdleSeconds), or within the reader's for rows from before that column.
-- Parameters: 1 TopicName (varchar), 2 the reader's idle period in seconds (bigint; for rows without IdleSeconds)
-- Returns: SubscriberQueue
SELECT "SubscriberQueue" FROM {schema}."NimbusSubscriptions"
WHERE "TopicName" = $1
    AND "LastSeenAt" >= (now() AT TIME ZONE 'utc') - COALESCE("IdleSeconds", $2::bigint) * interval '1 second'
ORDER BY "SubscriberQueue"

-- Lists the queues subscribed to a topic whose heartbeat is within the idle period.
-- Parameters: 1 TopicName (varchar), 2 idle period in seconds (bigint; rows not seen for longer are skipped)
-- Returns: SubscriberQueue
SELECT "SubscriberQueue" FROM "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
WHERE "TopicName" = $1
    AND "LastSeenAt" >= (now() AT TIME ZONE 'utc') - $2::bigint * interval '1 second'
ORDER BY "SubscriberQueue"

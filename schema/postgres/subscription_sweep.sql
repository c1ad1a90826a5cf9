-- Deletes and returns the subscriptions not seen for the idle period their own subscriber
-- promised (IdleSeconds), or the sweeper's for rows from before that column.
-- Parameters: 1 the sweeper's idle period in seconds (bigint; for rows without IdleSeconds)
-- Returns: TopicName, SubscriberQueue
DELETE FROM {schema}."NimbusSubscriptions"
WHERE "LastSeenAt" < (now() AT TIME ZONE 'utc') - COALESCE("IdleSeconds", $1::bigint) * interval '1 second'
RETURNING "TopicName", "SubscriberQueue"

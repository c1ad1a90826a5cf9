-- Deletes and returns the subscriptions not seen for the idle period.
-- Parameters: 1 idle period in seconds (bigint)
-- Returns: TopicName, SubscriberQueue
DELETE FROM {schema}."NimbusSubscriptions"
WHERE "LastSeenAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
RETURNING "TopicName", "SubscriberQueue"

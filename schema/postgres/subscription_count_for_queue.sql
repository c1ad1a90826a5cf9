-- Counts the subscriptions left for a queue.
-- Parameters: 1 SubscriberQueue (varchar)
-- Returns: count (bigint)
SELECT count(*) FROM {schema}."NimbusSubscriptions"
WHERE "SubscriberQueue" = $1

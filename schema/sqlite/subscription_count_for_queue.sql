-- Counts the subscriptions left for a queue.
-- Parameters: 1 SubscriberQueue (text)
-- Returns: count (integer)
SELECT count(*) FROM "NimbusSubscriptions"
WHERE "SubscriberQueue" = ?1

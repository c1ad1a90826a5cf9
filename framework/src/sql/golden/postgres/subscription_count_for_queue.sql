-- Counts the subscriptions left for a queue.
-- Parameters: 1 SubscriberQueue (varchar)
-- Returns: count (bigint)
SELECT count(*) FROM "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
WHERE "SubscriberQueue" = $1

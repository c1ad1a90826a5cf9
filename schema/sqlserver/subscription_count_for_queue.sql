-- Counts the subscriptions left for a queue.
-- Parameters: 1 SubscriberQueue (nvarchar(255))
-- Returns: count (bigint, unnamed)
SELECT COUNT_BIG(*) FROM {schema}.[NimbusSubscriptions]
WHERE [SubscriberQueue] = @P1;

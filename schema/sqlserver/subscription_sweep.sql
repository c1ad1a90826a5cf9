-- Deletes and returns the subscriptions not seen for the idle period.
-- Parameters: 1 idle period in seconds (bigint)
-- Returns: TopicName, SubscriberQueue
DELETE FROM {schema}.[NimbusSubscriptions]
OUTPUT deleted.[TopicName], deleted.[SubscriberQueue]
WHERE [LastSeenAt] < DATEADD(second, -@P1, SYSUTCDATETIME());

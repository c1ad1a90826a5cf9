-- Deletes and returns the subscriptions not seen for the idle period their own subscriber
-- promised (IdleSeconds), or the sweeper's for rows from before that column.
-- DATEADD takes an int: idle periods are far below its 68 years.
-- Parameters: 1 the sweeper's idle period in seconds (bigint; for rows without IdleSeconds)
-- Returns: TopicName, SubscriberQueue
DELETE FROM {schema}.[NimbusSubscriptions]
OUTPUT deleted.[TopicName], deleted.[SubscriberQueue]
WHERE [LastSeenAt] < DATEADD(second, -CAST(COALESCE([IdleSeconds], @P1) AS int), SYSUTCDATETIME());

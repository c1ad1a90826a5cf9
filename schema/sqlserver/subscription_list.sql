-- Lists the queues subscribed to a topic whose heartbeat is within the idle period.
-- Parameters: 1 TopicName (nvarchar(255)), 2 idle period in seconds (bigint; rows not seen for longer are skipped)
-- Returns: SubscriberQueue
SELECT [SubscriberQueue] FROM {schema}.[NimbusSubscriptions]
WHERE [TopicName] = @P1
    AND [LastSeenAt] >= DATEADD(second, -@P2, SYSUTCDATETIME())
ORDER BY [SubscriberQueue];

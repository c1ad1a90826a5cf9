-- Lists the queues subscribed to a topic that are live: seen within the idle period their own
-- subscriber promised (IdleSeconds), or within the reader's for rows from before that column.
-- DATEADD takes an int: idle periods are far below its 68 years.
-- Parameters: 1 TopicName (nvarchar(255)), 2 the reader's idle period in seconds (bigint; for rows without IdleSeconds)
-- Returns: SubscriberQueue
SELECT [SubscriberQueue] FROM [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
WHERE [TopicName] = @P1
    AND [LastSeenAt] >= DATEADD(second, -CAST(COALESCE([IdleSeconds], @P2) AS int), SYSUTCDATETIME())
ORDER BY [SubscriberQueue];

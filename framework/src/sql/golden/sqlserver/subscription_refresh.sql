UPDATE [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
SET [LastSeenAt] = SYSUTCDATETIME()
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;
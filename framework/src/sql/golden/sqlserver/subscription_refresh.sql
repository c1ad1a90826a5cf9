-- Refreshes LastSeenAt of one subscription (its heartbeat); affects no row when it is gone.
-- Parameters: 1 TopicName (nvarchar(255)), 2 SubscriberQueue (nvarchar(255))
UPDATE [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
SET [LastSeenAt] = SYSUTCDATETIME()
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;

-- Writes one subscription, or refreshes its LastSeenAt when it exists.
-- Parameters: 1 TopicName (nvarchar(255)), 2 SubscriberQueue (nvarchar(255))
UPDATE [Zeb]]ra "x" 'y'].[NimbusSubscriptions] WITH (UPDLOCK, SERIALIZABLE)
SET [LastSeenAt] = SYSUTCDATETIME()
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;
IF @@ROWCOUNT = 0
    INSERT INTO [Zeb]]ra "x" 'y'].[NimbusSubscriptions] ([TopicName], [SubscriberQueue], [LastSeenAt])
    VALUES (@P1, @P2, SYSUTCDATETIME());

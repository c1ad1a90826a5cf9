-- Writes one subscription, or refreshes its LastSeenAt when it exists.
-- Parameters: 1 TopicName (nvarchar(255)), 2 SubscriberQueue (nvarchar(255))
UPDATE {schema}.[NimbusSubscriptions] WITH (UPDLOCK, SERIALIZABLE)
SET [LastSeenAt] = SYSUTCDATETIME()
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;
IF @@ROWCOUNT = 0
    INSERT INTO {schema}.[NimbusSubscriptions] ([TopicName], [SubscriberQueue], [LastSeenAt])
    VALUES (@P1, @P2, SYSUTCDATETIME());

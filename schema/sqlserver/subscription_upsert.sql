-- Writes one subscription, or refreshes its LastSeenAt (and the idle period its subscriber
-- promised) when it exists.
-- Parameters: 1 TopicName (nvarchar(255)), 2 SubscriberQueue (nvarchar(255)), 3 IdleSeconds (bigint: the subscriber's auto_delete_on_idle)
UPDATE {schema}.[NimbusSubscriptions] WITH (UPDLOCK, SERIALIZABLE)
SET [LastSeenAt] = SYSUTCDATETIME(), [IdleSeconds] = @P3
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;
IF @@ROWCOUNT = 0
    INSERT INTO {schema}.[NimbusSubscriptions] ([TopicName], [SubscriberQueue], [LastSeenAt], [IdleSeconds])
    VALUES (@P1, @P2, SYSUTCDATETIME(), @P3);

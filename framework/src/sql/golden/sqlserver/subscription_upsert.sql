UPDATE [Zeb]]ra "x" 'y'].[NimbusSubscriptions] WITH (UPDLOCK, SERIALIZABLE)
SET [LastSeenAt] = SYSUTCDATETIME(), [IdleSeconds] = @P3
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;
IF @@ROWCOUNT = 0
    INSERT INTO [Zeb]]ra "x" 'y'].[NimbusSubscriptions] ([TopicName], [SubscriberQueue], [LastSeenAt], [IdleSeconds])
    VALUES (@P1, @P2, SYSUTCDATETIME(), @P3);
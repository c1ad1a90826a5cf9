UPDATE [Zeb]]ra "x" 'y'].[SubscriptionRouting] WITH (UPDLOCK, SERIALIZABLE)
SET [QueueAddress] = @P1
WHERE [Endpoint] = @P2 AND [Topic] = @P3;
IF @@ROWCOUNT = 0
    INSERT INTO [Zeb]]ra "x" 'y'].[SubscriptionRouting] ([QueueAddress], [Endpoint], [Topic])
    VALUES (@P1, @P2, @P3);
DELETE FROM [Zeb]]ra "x" 'y'].[NimbusMessages]
WHERE [MessageId] IN (
    SELECT TOP (@P2) [MessageId] FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (READPAST)
    WHERE [Destination] = @P1 AND [ExpiresAt] < SYSUTCDATETIME());
SELECT TOP (@P2) [MessageId], [Body], [VisibleAfter], [ExpiresAt]
FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (READPAST)
WHERE [Destination] = @P1
ORDER BY [VisibleAfter], [MessageId];
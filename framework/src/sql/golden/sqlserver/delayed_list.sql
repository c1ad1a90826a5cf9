SELECT TOP (@P1) [Id], [Destination], [Due], [Headers]
FROM [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] WITH (READPAST)
ORDER BY [Due], [RowVersion];
SELECT TOP (@P1) [MessageId], [Destination], [VisibleAfter], [Body]
FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (READPAST)
WHERE [VisibleAfter] > SYSUTCDATETIME()
ORDER BY [VisibleAfter], [MessageId];
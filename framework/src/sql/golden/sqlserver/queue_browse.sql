SELECT TOP (@P1) [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body], [Expires], [RowVersion]
FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (READPAST)
ORDER BY [RowVersion];
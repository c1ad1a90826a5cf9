-- Returns the first rows of a queue table by RowVersion, without removing them.
-- Parameters: 1 max rows (bigint)
-- Returns: Id (uniqueidentifier), CorrelationId, ReplyToAddress, Headers, Body, Expires, RowVersion
SELECT TOP (@P1) [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body], [Expires], [RowVersion]
FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
ORDER BY [RowVersion];

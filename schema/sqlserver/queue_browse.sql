-- Returns the first rows of a queue table by RowVersion, without removing them.
-- Parameters: 1 max rows (bigint)
-- Returns: Id (uniqueidentifier), CorrelationId, ReplyToAddress, Headers, Body, Expires, RowVersion
-- READPAST, as NServiceBus's script for inspecting a queue: rows other transactions hold (being
-- received right now) are skipped instead of waiting for those transactions to end.
SELECT TOP (@P1) [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body], [Expires], [RowVersion]
FROM {table} WITH (READPAST)
ORDER BY [RowVersion];

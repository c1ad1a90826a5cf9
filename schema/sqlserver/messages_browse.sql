-- Returns the first rows of a destination in NimbusMessages by VisibleAfter, MessageId, without removing them.
-- Parameters: 1 Destination (nvarchar(255)), 2 max rows (bigint)
-- Returns: MessageId (uniqueidentifier), Body, VisibleAfter, ExpiresAt
-- READPAST as in queue_browse.sql: rows being received are skipped, not waited for.
SELECT TOP (@P2) [MessageId], [Body], [VisibleAfter], [ExpiresAt]
FROM {schema}.[NimbusMessages] WITH (READPAST)
WHERE [Destination] = @P1
ORDER BY [VisibleAfter], [MessageId];

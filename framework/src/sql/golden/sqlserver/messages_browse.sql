-- Returns the first rows of a destination in NimbusMessages by VisibleAfter, MessageId, without removing them.
-- Parameters: 1 Destination (nvarchar(255)), 2 max rows (bigint)
-- Returns: MessageId (uniqueidentifier), Body, VisibleAfter, ExpiresAt
SELECT TOP (@P2) [MessageId], [Body], [VisibleAfter], [ExpiresAt]
FROM [Zeb]]ra "x" 'y'].[NimbusMessages]
WHERE [Destination] = @P1
ORDER BY [VisibleAfter], [MessageId];

-- Lists dead letters, oldest FailedAt first (MessageId breaks ties), without removing them.
-- Parameters: 1 max rows (bigint)
-- Returns: MessageId (uniqueidentifier), OriginalDestination, Body, DeliveryAttempts, FailedAt
SELECT TOP (@P1) [MessageId], [OriginalDestination], [Body], [DeliveryAttempts], [FailedAt]
FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters]
ORDER BY [FailedAt], [MessageId];

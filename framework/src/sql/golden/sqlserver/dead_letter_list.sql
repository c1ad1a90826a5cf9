SELECT TOP (@P1) [MessageId], [OriginalDestination], [Body], [DeliveryAttempts], [FailedAt]
FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters]
ORDER BY [FailedAt], [MessageId];
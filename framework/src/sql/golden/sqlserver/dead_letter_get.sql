SELECT [MessageId], [OriginalDestination], [Body], [DeliveryAttempts], [FailedAt]
FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters]
WHERE [MessageId] = @P1;
SELECT TOP (@P6) [MessageId], [OriginalDestination], [Body], [DeliveryAttempts], [FailedAt]
FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters]
WHERE (@P1 IS NULL OR [OriginalDestination] = @P1)
    AND (@P2 IS NULL OR [FailedAt] <= @P2)
    AND (@P3 IS NULL OR [FailedAt] >= @P3)
    AND (@P4 IS NULL OR [FailedAt] > @P4 OR ([FailedAt] = @P4 AND [MessageId] > @P5))
ORDER BY [FailedAt], [MessageId];
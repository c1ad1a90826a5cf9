SELECT TOP (@P2) [SagaType], [CorrelationId], [State], [Version], [StartedAt], [UpdatedAt], [Id]
FROM [Zeb]]ra "x" 'y'].[NimbusSagas]
WHERE [CompletedAt] IS NULL AND (@P1 IS NULL OR [SagaType] = @P1)
ORDER BY [StartedAt], [Id];
SELECT [Id], [State], [Version], [CompletedAt]
FROM [Zeb]]ra "x" 'y'].[NimbusSagas] WITH (UPDLOCK, ROWLOCK, HOLDLOCK)
WHERE [SagaType] = @P1 AND [CorrelationId] = @P2;
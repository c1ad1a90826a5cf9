INSERT INTO [Zeb]]ra "x" 'y'].[NimbusSagas] ([Id], [SagaType], [CorrelationId], [State], [Version], [StartedAt], [UpdatedAt])
VALUES (@P1, @P2, @P3, @P4, 1, SYSUTCDATETIME(), SYSUTCDATETIME());
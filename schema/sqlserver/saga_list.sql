-- Lists running saga instances (not completed), oldest first, without locking them: of one
-- saga type, or of every type.
-- Parameters: 1 only this SagaType (nvarchar(255) or NULL), 2 max rows (bigint)
-- Returns: SagaType, CorrelationId, State, Version, StartedAt, UpdatedAt, Id (uniqueidentifier)
SELECT TOP (@P2) [SagaType], [CorrelationId], [State], [Version], [StartedAt], [UpdatedAt], [Id]
FROM {schema}.[NimbusSagas]
WHERE [CompletedAt] IS NULL AND (@P1 IS NULL OR [SagaType] = @P1)
ORDER BY [StartedAt], [Id];

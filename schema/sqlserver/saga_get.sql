-- Reads a saga instance by its type and correlation value, and locks its row (and, with
-- HOLDLOCK, the key when it does not exist yet) until the receive's transaction ends, so that a
-- second message for the same instance waits for the first; no row when there is none. A
-- completed instance (CompletedAt set) is returned too: messages for it are not handled.
-- Parameters: 1 SagaType (nvarchar(255)), 2 CorrelationId (nvarchar(255))
-- Returns: Id (uniqueidentifier), State, Version, CompletedAt
SELECT [Id], [State], [Version], [CompletedAt]
FROM {schema}.[NimbusSagas] WITH (UPDLOCK, ROWLOCK, HOLDLOCK)
WHERE [SagaType] = @P1 AND [CorrelationId] = @P2;

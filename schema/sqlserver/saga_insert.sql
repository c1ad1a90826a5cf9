-- Stores a new saga instance at version 1; fails on the unique index when another message
-- started the same instance first (that message's receive is then retried, and finds it).
-- Parameters: 1 Id (uniqueidentifier), 2 SagaType (nvarchar(255)), 3 CorrelationId (nvarchar(255)), 4 State (nvarchar(max): JSON)
INSERT INTO {schema}.[NimbusSagas] ([Id], [SagaType], [CorrelationId], [State], [Version], [StartedAt], [UpdatedAt])
VALUES (@P1, @P2, @P3, @P4, 1, SYSUTCDATETIME(), SYSUTCDATETIME());

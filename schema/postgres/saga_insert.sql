-- Stores a new saga instance at version 1; fails on the unique index when another message
-- started the same instance first (that message's receive is then retried, and finds it).
-- Parameters: 1 Id (uuid), 2 SagaType (varchar), 3 CorrelationId (varchar), 4 State (text: JSON)
INSERT INTO {schema}."NimbusSagas" ("Id", "SagaType", "CorrelationId", "State", "Version", "StartedAt", "UpdatedAt")
VALUES ($1, $2, $3, $4, 1, (now() AT TIME ZONE 'utc'), (now() AT TIME ZONE 'utc'))

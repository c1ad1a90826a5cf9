-- Stores a new saga instance at version 1; fails on the unique index when another message
-- started the same instance first (that message's receive is then retried, and finds it).
-- Parameters: 1 Id (text), 2 SagaType (text), 3 CorrelationId (text), 4 State (text: JSON)
INSERT INTO "NimbusSagas" ("Id", "SagaType", "CorrelationId", "State", "Version", "StartedAt", "UpdatedAt")
VALUES (?1, ?2, ?3, ?4, 1, strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'))

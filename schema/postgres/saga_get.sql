-- Reads a saga instance by its type and correlation value, and locks its row until the
-- receive's transaction ends, so that a second message for the same instance waits for the
-- first instead of changing the same state; no row when there is none. A completed instance
-- (CompletedAt set) is returned too: messages for it are not handled.
-- Parameters: 1 SagaType (varchar), 2 CorrelationId (varchar)
-- Returns: Id (text), State, Version, CompletedAt
SELECT "Id"::text AS "Id", "State", "Version", "CompletedAt"
FROM {schema}."NimbusSagas"
WHERE "SagaType" = $1 AND "CorrelationId" = $2
FOR UPDATE

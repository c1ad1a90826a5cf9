-- Reads a saga instance by its type and correlation value (the receive's transaction already
-- holds the file's one write lock, so no other message changes it meanwhile); no row when there
-- is none.
-- Parameters: 1 SagaType (text), 2 CorrelationId (text)
-- Returns: Id (text), State, Version
SELECT "Id", "State", "Version"
FROM "NimbusSagas"
WHERE "SagaType" = ?1 AND "CorrelationId" = ?2

-- Reads a saga instance by its type and correlation value (the receive's transaction already
-- holds the file's one write lock, so no other message changes it meanwhile); no row when there
-- is none. A completed instance (CompletedAt set) is returned too: messages for it are not
-- handled.
-- Parameters: 1 SagaType (text), 2 CorrelationId (text)
-- Returns: Id (text), State, Version, CompletedAt
SELECT "Id", "State", "Version", "CompletedAt"
FROM "NimbusSagas"
WHERE "SagaType" = ?1 AND "CorrelationId" = ?2

-- Lists running saga instances (not completed), oldest first, without locking them: of one
-- saga type, or of every type.
-- Parameters: 1 only this SagaType (text or NULL), 2 max rows (integer)
-- Returns: SagaType, CorrelationId, State, Version, StartedAt, UpdatedAt, Id (text)
SELECT "SagaType", "CorrelationId", "State", "Version", "StartedAt", "UpdatedAt", "Id"
FROM "NimbusSagas"
WHERE "CompletedAt" IS NULL AND (?1 IS NULL OR "SagaType" = ?1)
ORDER BY "StartedAt", "Id"
LIMIT ?2

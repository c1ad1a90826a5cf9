-- Lists running saga instances (not completed), oldest first, without locking them: of one
-- saga type, or of every type.
-- Parameters: 1 only this SagaType (varchar or NULL), 2 max rows (bigint)
-- Returns: SagaType, CorrelationId, State, Version, StartedAt, UpdatedAt, Id (text)
SELECT "SagaType", "CorrelationId", "State", "Version", "StartedAt", "UpdatedAt", "Id"::text AS "Id"
FROM {schema}."NimbusSagas"
WHERE "CompletedAt" IS NULL AND ($1::text IS NULL OR "SagaType" = $1)
ORDER BY "StartedAt", "Id"
LIMIT $2

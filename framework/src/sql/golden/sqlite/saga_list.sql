SELECT "SagaType", "CorrelationId", "State", "Version", "StartedAt", "UpdatedAt", "Id"
FROM "NimbusSagas"
WHERE "CompletedAt" IS NULL AND (?1 IS NULL OR "SagaType" = ?1)
ORDER BY "StartedAt", "Id"
LIMIT ?2
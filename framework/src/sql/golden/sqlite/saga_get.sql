SELECT "Id", "State", "Version", "CompletedAt"
FROM "NimbusSagas"
WHERE "SagaType" = ?1 AND "CorrelationId" = ?2
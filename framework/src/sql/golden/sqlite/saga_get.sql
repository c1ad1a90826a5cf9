SELECT "Id", "State", "Version"
FROM "NimbusSagas"
WHERE "SagaType" = ?1 AND "CorrelationId" = ?2
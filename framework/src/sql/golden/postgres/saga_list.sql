SELECT "SagaType", "CorrelationId", "State", "Version", "StartedAt", "UpdatedAt", "Id"::text AS "Id"
FROM "Zeb]ra ""x"" 'y'"."NimbusSagas"
WHERE "CompletedAt" IS NULL AND ($1::text IS NULL OR "SagaType" = $1)
ORDER BY "StartedAt", "Id"
LIMIT $2
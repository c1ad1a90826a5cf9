SELECT "SagaType", "CorrelationId", "State", "Version", "StartedAt", "UpdatedAt", "Id"::text AS "Id"
FROM "Zeb]ra ""x"" 'y'"."NimbusSagas"
WHERE ($1::text IS NULL OR "SagaType" = $1)
ORDER BY "StartedAt", "Id"
LIMIT $2
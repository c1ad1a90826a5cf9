SELECT "Id"::text AS "Id", "State", "Version", "CompletedAt"
FROM "Zeb]ra ""x"" 'y'"."NimbusSagas"
WHERE "SagaType" = $1 AND "CorrelationId" = $2
FOR UPDATE